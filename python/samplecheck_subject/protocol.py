"""The wire of the subject-process protocol (docs/subject-protocol.md, version 1).

Control frames: a 4-byte little-endian length, then that many bytes of one UTF-8 JSON
object, over the inherited AF_UNIX socket. Bulk data: the inherited memfd, mapped shared;
every array is a numpy view of the mapping (np.frombuffer), never a copy.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import socket
import struct
from typing import Any

import numpy as np

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20

# sc_status (kernels/samplecheck_plugin.h).
SC_OK = 0
SC_ERR_INVALID_ARGUMENT = 1
SC_ERR_UNSUPPORTED = 2
SC_ERR_DEVICE = 3
SC_ERR_INTERNAL = 4


class ProtocolError(Exception):
    """The host sent something this side cannot read (the reply is an "error" frame)."""


class Channel:
    """The control socket: whole frames in, whole frames out."""

    def __init__(self, fd: int) -> None:
        self._sock = socket.socket(fileno=fd)

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        if not 1 <= len(body) <= MAX_FRAME:
            raise ProtocolError(f"a frame of {len(body)} bytes is outside [1, {MAX_FRAME}]")
        self._sock.sendall(struct.pack("<I", len(body)) + body)

    def receive(self) -> dict[str, Any] | None:
        """The next message, or None at EOF (which means shutdown)."""
        header = self._read_exactly(4)
        if header is None:
            return None
        (length,) = struct.unpack("<I", header)
        if not 1 <= length <= MAX_FRAME:
            raise ProtocolError(f"frame length {length} is outside [1, {MAX_FRAME}]")
        body = self._read_exactly(length)
        if body is None:
            raise ProtocolError(f"EOF inside a frame of {length} bytes")
        try:
            message = json.loads(body)
        except ValueError as e:
            raise ProtocolError(f"a frame that is not JSON: {e}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError("a frame that is not a JSON object with a string 'type'")
        return message

    def _read_exactly(self, n: int) -> bytes | None:
        chunks: list[bytes] = []
        got = 0
        while got < n:
            chunk = self._sock.recv(n - got)
            if not chunk:
                if got == 0:
                    return None
                raise ProtocolError(f"EOF after {got} of {n} bytes")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


class SharedRegion:
    """The memfd, mapped read-write; grows when a request states a larger shm_size."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._map: mmap.mmap | None = None
        self.size: int = 0  # bytes mapped

    def ensure(self, shm_size: int) -> None:
        if self._map is not None and shm_size <= self.size:
            return
        actual = os.fstat(self._fd).st_size
        if shm_size > actual:
            raise ProtocolError(f"shm_size = {shm_size} but the region holds {actual} bytes")
        # Views of the old mapping die with the request that made them, so it can go.
        if self._map is not None:
            # BufferError: the subject kept a view; the old mapping lives until that view dies.
            with contextlib.suppress(BufferError):
                self._map.close()
        self._map = mmap.mmap(self._fd, actual, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.size = actual

    def view(self, spec: Any, dtype: Any, field: str, expected_count: int | None = None) -> np.ndarray | None:
        """The array `spec` = {"at": offset, "count": n} as a numpy view; None for null."""
        if spec is None:
            return None
        if not isinstance(spec, dict):
            raise ProtocolError(f"arrays.{field} is not an object or null")
        at, count = spec.get("at"), spec.get("count")
        if not isinstance(at, int) or not isinstance(count, int) or at < 0 or count < 0:
            raise ProtocolError(f"arrays.{field} needs non-negative integers 'at' and 'count'")
        if expected_count is not None and count != expected_count:
            raise ProtocolError(f"arrays.{field}.count = {count}, expected {expected_count}")
        dtype = np.dtype(dtype).newbyteorder("<")
        if self._map is None or at + count * dtype.itemsize > self.size:
            raise ProtocolError(f"arrays.{field} ends past the {self.size}-byte region")
        return np.frombuffer(self._map, dtype=dtype, count=count, offset=at)


def receive_shm_fd(conn: socket.socket) -> int:
    """The memfd samplecheck sends on a `--connect` connection: one byte (0) carrying it as
    SCM_RIGHTS, before anything else on the socket (docs/subject-protocol.md)."""
    data, fds, _, _ = socket.recv_fds(conn, 1, 1)
    if data != b"\0" or len(fds) != 1:
        for fd in fds:
            os.close(fd)
        raise ProtocolError(f"expected one 0 byte carrying the shared-memory fd, got {data!r} with {len(fds)} fds")
    return fds[0]


def inherited_fds() -> tuple[int, int]:
    """The two descriptors samplecheck hands the subject, from its environment."""
    missing = [k for k in ("SAMPLECHECK_CONTROL_FD", "SAMPLECHECK_SHM_FD") if k not in os.environ]
    if missing:
        raise RuntimeError(
            f"{' and '.join(missing)} not set: start this program through "
            '`samplecheck qualify --exec "CMD"`, which hands it the protocol\'s descriptors'
        )
    return int(os.environ["SAMPLECHECK_CONTROL_FD"]), int(os.environ["SAMPLECHECK_SHM_FD"])
