"""A callable served from forked children of this process, for `samplecheck qualify --connect
PATH`: closures, bound methods and factory-built callables need no import by name.

samplecheck connects to the listening AF_UNIX socket once per subject-process start (again
after a crash or a hang) and sends one 0 byte carrying the shared-memory memfd. The server
answers one 0 byte, and the kernel tells samplecheck which process sent it (SO_PASSCRED):
that pid is what samplecheck kills when a call hangs, so it must be a process serving this
connection alone, never the listener. The parent accepts and forks; the child, holding the
only copy of the connection, answers, speaks the protocol as an --exec subject does
(docs/subject-protocol.md) until shutdown, and exits without returning into the caller's
stack (pytest's, say).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from types import TracebackType
from typing import IO, Any

from .protocol import receive_shm_fd
from .serve import Descriptor, Subject, device_unavailable, serve_subjects

# How long the children may take to see the end of their connection once samplecheck has
# exited, before they are killed: they only have to read EOF and return.
_CHILD_GRACE_SECONDS = 10.0


def fork_possible(descriptors: Sequence[Descriptor]) -> str | None:
    """None when the subject can be served from a fork of this process, else why not."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return f"no fork with memfd and SCM_RIGHTS on {sys.platform}"
    torch = sys.modules.get("torch")
    cuda = any(d.memory_space == "cuda" for d in descriptors)
    if cuda and torch is not None and torch.cuda.is_initialized():
        # A forked child cannot use the parent's CUDA context (CUDA's rule, not ours).
        return "CUDA is already initialised in this process, and a forked child cannot use it"
    return None


class ForkServer:
    """with ForkServer(pairs) as server: server.run([samplecheck, ..., "--connect", server.path])"""

    def __init__(self, pairs: Sequence[tuple[Subject, Descriptor]], unavailable: str | None = None) -> None:
        self._pairs = list(pairs)
        self._unavailable = unavailable
        self._children: set[int] = set()
        self._dir = ""
        self.path: str = ""  # the listening socket's, once entered
        self._listener: socket.socket | None = None

    def __enter__(self) -> ForkServer:
        # A short path of its own: sun_path holds 108 bytes, and pytest's tmp_path can be longer.
        self._dir = tempfile.mkdtemp(prefix="samplecheck-")
        self.path = os.path.join(self._dir, "subject.sock")
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(8)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._reap_all()
        shutil.rmtree(self._dir, ignore_errors=True)

    def run(self, argv: Sequence[str], env: dict[str, str], stdout: IO[Any], stderr: IO[Any]) -> int:
        """Runs samplecheck, forking a server for each connection it makes; its exit status."""
        assert self._listener is not None, "run() inside `with ForkServer(...)`"
        process = subprocess.Popen(list(argv), env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        try:
            while process.poll() is None:
                ready, _, _ = select.select([self._listener], [], [], 0.05)
                if ready:
                    self._accept()
                self._reap(block=False)
        except BaseException:
            process.kill()
            process.wait()
            raise
        return process.returncode

    def _accept(self) -> None:
        assert self._listener is not None
        connection, _ = self._listener.accept()
        sys.stdout.flush()  # or the child would write this process's pending output again
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self._serve_child(connection)  # never returns
        connection.close()  # the child holds it: its exit is the connection's end
        self._children.add(pid)

    def _serve_child(self, connection: socket.socket) -> None:
        status = 1
        try:
            if self._listener is not None:
                self._listener.close()
            shm_fd = receive_shm_fd(connection)
            connection.sendall(b"\0")  # the answer whose sender samplecheck learns from the kernel
            unavailable = self._unavailable or device_unavailable(d for _, d in self._pairs)
            status = serve_subjects(self._pairs, unavailable, fds=(connection.detach(), shm_fd))
        except BaseException:  # noqa: BLE001 - whatever ends the child is reported, then it exits
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)  # not the parent's atexit handlers, buffers or pytest's teardown

    def _reap(self, block: bool) -> None:
        for pid in list(self._children):
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if done:
                self._children.discard(pid)

    def _reap_all(self) -> None:
        deadline = time.monotonic() + _CHILD_GRACE_SECONDS
        while self._children and time.monotonic() < deadline:
            self._reap(block=False)
            time.sleep(0.01)
        for pid in self._children:
            os.kill(pid, signal.SIGKILL)
        self._reap(block=True)
