"""The host's side of the subject-process protocol, in Python, for tests of the package's
side alone (framing, views, refusals, replies) without samplecheck: it starts a subject
command with the two descriptors, as samplecheck does, and sends requests by hand."""

import contextlib
import json
import mmap
import os
import socket
import struct
import subprocess
import sys

import numpy as np

ALIGN = 64


class Host:
    """Starts `argv` as samplecheck starts an --exec subject; with connect=PATH instead, connects
    to a listening subject as `samplecheck --connect PATH` does (one 0 byte carrying the memfd)."""

    def __init__(self, argv=None, env=None, shm_size=1 << 20, connect=None):
        self.shm_fd = os.memfd_create("samplecheck-test")
        os.ftruncate(self.shm_fd, shm_size)
        self.shm_size = shm_size
        self.map = mmap.mmap(self.shm_fd, shm_size)
        self.next_id = 1
        if connect is not None:
            self.proc = None
            self.parent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.parent.settimeout(30)
            self.parent.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self.parent.connect(connect)
            socket.send_fds(self.parent, [b"\0"], [self.shm_fd])
            self.server_pid = self._answer()
            self.hello = self.receive()
            return
        self.parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        environment = dict(os.environ if env is None else env)
        environment.update(
            SAMPLECHECK_PROTOCOL="1", SAMPLECHECK_CONTROL_FD=str(child.fileno()), SAMPLECHECK_SHM_FD=str(self.shm_fd)
        )
        self.proc = subprocess.Popen(
            argv,
            env=environment,
            pass_fds=(child.fileno(), self.shm_fd),
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        child.close()
        self.parent.settimeout(30)
        self.hello = self.receive()

    def _answer(self):
        """The connected server's one-byte answer; the pid of its sender, from the kernel
        (SCM_CREDENTIALS): the process samplecheck kills when a call hangs."""
        data, ancillary, _, _ = self.parent.recvmsg(1, socket.CMSG_SPACE(struct.calcsize("3i")))
        assert data == b"\0", data
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                return struct.unpack("3i", value[:12])[0]
        raise AssertionError("the answer carried no credentials")

    def listener_pid(self):
        """SO_PEERCRED: the process that listens at the path (which must not be the server)."""
        creds = self.parent.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[0]

    def send(self, message):
        body = json.dumps(message).encode()
        self.parent.sendall(struct.pack("<I", len(body)) + body)

    def receive(self):
        header = self._exactly(4)
        if header is None:
            return None
        body = self._exactly(struct.unpack("<I", header)[0])
        return json.loads(body)

    def _exactly(self, n):
        data = b""
        while len(data) < n:
            chunk = self.parent.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def grow(self, size):
        if size > self.shm_size:
            os.ftruncate(self.shm_fd, size)
            self.map.close()
            self.map = mmap.mmap(self.shm_fd, size)
            self.shm_size = size

    def place(self, named):
        """Lays out arrays (name -> numpy array or None) in the region; returns the specs."""
        at, specs = 0, {}
        for name, a in named.items():
            if a is None:
                specs[name] = None
                continue
            a = np.ascontiguousarray(a)
            need = at + a.nbytes
            self.grow(max(need + ALIGN, self.shm_size))
            self.map[at:need] = a.tobytes()
            specs[name] = {"at": at, "count": int(a.size)}
            at = (need + ALIGN - 1) // ALIGN * ALIGN
        return specs

    def array(self, spec, dtype):
        return np.frombuffer(self.map, dtype=dtype, count=spec["count"], offset=spec["at"]).copy()

    def sample(
        self,
        subject,
        rows,
        seed,
        offset,
        row_index=None,
        subsequence=None,
        input_dtype="f32",
        top_k=None,
        top_p=None,
        min_p=None,
        temperature=None,
        extra=None,
    ):
        rows = np.asarray(rows)
        n_out = len(seed)
        specs = self.place(
            {
                "input": rows,
                "row_index": row_index,
                "top_k": top_k,
                "top_p": top_p,
                "min_p": min_p,
                "temperature": temperature,
                "seed": np.asarray(seed, np.uint64),
                "subsequence": subsequence,
                "offset": np.asarray(offset, np.uint64),
                "out_token": np.full(n_out, -7, np.int32),
                "out_valid": np.full(n_out, 9, np.uint8),
            }
        )
        request = {
            "type": "sample",
            "id": self.next_id,
            "subject": subject,
            "shm_size": self.shm_size,
            "vocab_size": int(rows.shape[1]),
            "num_input_rows": int(rows.shape[0]),
            "num_output_rows": n_out,
            "input_dtype": input_dtype,
            "arrays": specs,
        }
        request.update(extra or {})
        self.next_id += 1
        self.send(request)
        reply = self.receive()
        return reply, self.array(specs["out_token"], np.int32), self.array(specs["out_valid"], np.uint8)

    def matmul(self, subject, a, weight, bias=None, launch_config=-1, generation=1):
        m, k = a.shape
        n = weight.shape[0]
        specs = self.place({"a": a, "weight": weight, "bias": bias, "out": np.zeros((m, n), np.uint16)})
        self.send(
            {
                "type": "matmul",
                "id": self.next_id,
                "subject": subject,
                "shm_size": self.shm_size,
                "m": m,
                "n": n,
                "k": k,
                "launch_config": launch_config,
                "operands_generation": generation,
                "arrays": specs,
            }
        )
        self.next_id += 1
        reply = self.receive()
        return reply, self.array(specs["out"], np.uint16).reshape(m, n)

    def close(self):
        with contextlib.suppress(OSError):
            self.send({"type": "shutdown"})
        if self.proc is None:  # connected: the subject ends its side after shutdown
            ended = self._exactly(1) is None
            self.parent.close()
            os.close(self.shm_fd)
            self.stderr = ""
            return 0 if ended else 1
        try:
            _, err = self.proc.communicate(timeout=10)
        finally:
            self.parent.close()
            os.close(self.shm_fd)
        self.stderr = err.decode(errors="replace") if err else ""
        return self.proc.returncode


def python_subject(*args):
    """argv running `python -m samplecheck_subject.run ARGS` with this interpreter."""
    return [sys.executable, "-m", "samplecheck_subject.run", *args]
