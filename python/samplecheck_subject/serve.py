"""serve(fn, descriptor): a Python callable as a samplecheck subject process.

    samplecheck qualify --exec "python my_subject.py"

where my_subject.py ends in serve(fn, descriptor). The process sends its hello, then
answers one request at a time until shutdown (docs/subject-protocol.md). The callable
only computes tokens (or matmul outputs, or an all-reduce's result); samplecheck judges them.
"""

from __future__ import annotations

import platform
import sys
import traceback
from collections.abc import Iterable
from typing import Any, Callable, Optional

import numpy as np

from . import batch as batch_mod
from . import shipped
from ._version import __version__
from .descriptor import CollectiveDescriptor, Descriptor, DescriptorError, MatmulDescriptor, SamplerDescriptor
from .protocol import (
    PROTOCOL_VERSION,
    SC_ERR_INTERNAL,
    SC_ERR_INVALID_ARGUMENT,
    SC_OK,
    Channel,
    ProtocolError,
    SharedRegion,
    inherited_fds,
)

# The callable: a SampleBatch (MatmulProblem, CollectiveProblem) in, tokens (and valid flags)
# or outputs back, or None after writing the batch's output views itself.
Subject = Callable[[Any], Any]
Pair = tuple[Subject, Descriptor]
SamplerPair = tuple[Subject, SamplerDescriptor]
Pairs = Iterable[Pair]
# What an adapter's subjects() factory gives `python -m samplecheck_subject.run`: its pairs,
# and why this machine cannot run them (None: it can).
Roster = tuple[list[Pair], Optional[str]]

# Packages whose version the hello reports when this process has imported them (numpy always).
REPORTED_PACKAGES = ("numpy", "torch", "flashinfer", "triton", "cupy", "jax", "vllm", "sglang")


def serve(fn: Subject, descriptor: Descriptor) -> int:
    """Serves one subject until samplecheck shuts it down; returns the exit status."""
    return serve_subjects([(fn, descriptor)])


def environment() -> dict[str, Any]:
    """The hello's "environment": this Python's version and the versions of the packages a
    subject's numbers depend on, those this process has imported, and the sha256 of each
    file of a shipped package that ran and of each FlashInfer module built ahead of time
    (samplecheck records them)."""
    packages = {"samplecheck_subject": __version__}
    for name in REPORTED_PACKAGES:
        module = sys.modules.get(name)
        version = getattr(module, "__version__", None)
        if version is not None:
            packages[name] = str(version)  # torch's is a str subclass
    packages.update(shipped.recorded())  # upstream files that ran, with their sha256
    packages.update(shipped.flashinfer_aot())  # its modules built ahead of time, if any
    return {"python": platform.python_version(), "packages": packages}


def device_unavailable(descriptors: Iterable[Descriptor]) -> str | None:
    """Why a "cuda" subject cannot run here (no torch, no device), else None; host subjects
    always can. samplecheck reports such a subject's checks skipped (device absent)."""
    if not any(d.memory_space == "cuda" for d in descriptors):
        return None
    from .adapters.common import cuda_unavailable

    return cuda_unavailable()


def serve_subjects(subjects: Pairs, unavailable: str | None = None, fds: tuple[int, int] | None = None) -> int:
    """Serves several (fn, descriptor) pairs in one process. `unavailable`: a reason this
    machine cannot run them (no CUDA device, say): samplecheck then skips their checks.
    `fds`: (control socket, shared-memory fd); default the ones samplecheck hands an --exec
    subject in its environment."""
    table: dict[str, _Subject] = {}
    for fn, descriptor in subjects:
        descriptor.validate()
        if descriptor.name in table:
            raise DescriptorError(f"{descriptor.name}: two subjects share this name")
        table[descriptor.name] = _Subject(fn, descriptor)
    if not table:
        raise DescriptorError("serve_subjects needs at least one subject")
    control_fd, shm_fd = inherited_fds() if fds is None else fds
    channel, region = Channel(control_fd), SharedRegion(shm_fd)
    hello = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "subjects": [s.descriptor.to_json() for s in table.values()],
        "environment": environment(),
    }
    if unavailable:
        hello["unavailable"] = unavailable
    channel.send(hello)
    while True:
        try:
            message = channel.receive()
            if message is None or message["type"] == "shutdown":
                return 0
            if message["type"] not in _KIND_OF_REQUEST:
                raise ProtocolError(f"a message of type {message['type']!r}")
            reply = _answer(table, region, message)
        except ProtocolError as e:
            channel.send({"type": "error", "message": f"subject: {e}"})
            return 1
        channel.send(reply)


# Each request type, and the kind of subject that answers it.
_KIND_OF_REQUEST = {"sample": "sampler", "matmul": "matmul", "collective": "collective"}


def _answer(table: dict[str, _Subject], region: SharedRegion, message: dict[str, Any]) -> dict[str, Any]:
    call_id = message.get("id")
    if not isinstance(call_id, int):
        raise ProtocolError("a request without an integer id")
    shm_size = message.get("shm_size")
    if not isinstance(shm_size, int):
        raise ProtocolError("a request without an integer shm_size")
    region.ensure(shm_size)
    subject = table.get(str(message.get("subject")))
    if subject is None:
        return _result(call_id, SC_ERR_INVALID_ARGUMENT, f"no subject named {message.get('subject')!r} here")
    if _KIND_OF_REQUEST[message["type"]] != subject.descriptor.kind:
        return _result(
            call_id,
            SC_ERR_INVALID_ARGUMENT,
            f"{subject.descriptor.name} is a {subject.descriptor.kind}: no {message['type']} requests",
        )
    try:
        if message["type"] == "sample":
            status, text = subject.sample(region, message)
        elif message["type"] == "matmul":
            status, text = subject.matmul(region, message)
        else:
            status, text = subject.collective(region, message)
    except batch_mod.SubjectError as e:
        status, text = e.status, f"{subject.descriptor.name}: {e}"
    except ProtocolError:
        raise
    except Exception as e:  # noqa: BLE001 - the subject's own failure: status 4, its text, its traceback on stderr
        traceback.print_exc(file=sys.stderr)
        sys.stderr.flush()
        status, text = SC_ERR_INTERNAL, f"{subject.descriptor.name}: {type(e).__name__}: {e}"
    return _result(call_id, status, text)


def _result(call_id: int, status: int, message: str = "") -> dict[str, Any]:
    return {"type": "result", "id": call_id, "status": int(status), "message": message}


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _from_dlpack(values: Any) -> Any:
    try:
        return np.from_dlpack(values)
    except (BufferError, RuntimeError, TypeError, ValueError):
        import torch

        return torch.from_dlpack(values)


class _Subject:
    def __init__(self, fn: Subject, descriptor: Descriptor) -> None:
        self.fn, self.descriptor = fn, descriptor
        self.device = descriptor.memory_space == "cuda"
        self._operands: Any = None  # (generation, weight, bias) on the device

    def sample(self, region: SharedRegion, message: dict[str, Any]) -> tuple[int, str]:
        arrays = batch_mod.sample_views(region, message)
        refused = batch_mod.refusal(self.descriptor, message, arrays)
        if refused is not None:
            return refused
        if message["num_output_rows"] == 0:
            return SC_OK, ""
        b = batch_mod.SampleBatch(self.descriptor, message, arrays)
        if self.device:
            from . import device

            device.to_device(b)
        returned = self.fn(b)
        if returned is not None:
            # (tokens, valid) or, for a subject that declares routes, (tokens, valid, routes).
            parts = returned if isinstance(returned, tuple) else (returned, None)
            tokens, valid = parts[0], parts[1]
            self._write(arrays["out_token"], tokens, np.int32, "tokens")
            if valid is None:
                arrays["out_valid"][:] = 1
            else:
                self._write(arrays["out_valid"], valid, np.uint8, "valid flags")
            if len(parts) > 2 and arrays.get("out_route") is not None:
                self._write(arrays["out_route"], parts[2], np.uint8, "routes")
        return SC_OK, ""

    def matmul(self, region: SharedRegion, message: dict[str, Any]) -> tuple[int, str]:
        arrays = batch_mod.matmul_views(region, message)
        p = batch_mod.MatmulProblem(self.descriptor, message, arrays)
        assert isinstance(self.descriptor, MatmulDescriptor)  # _answer routes matmul requests to matmuls only
        configs = len(self.descriptor.launch_configs)
        if not (p.launch_config == -1 or 0 <= p.launch_config < configs):
            return SC_ERR_INVALID_ARGUMENT, (
                f"{self.descriptor.name}: launch_config = {p.launch_config} is not -1 or below {configs}"
            )
        if self.device:
            from . import device

            self._operands = device.matmul_to_device(p, self._operands)
        returned = self.fn(p)
        if returned is not None:
            self._write(arrays["out"], returned, np.uint16, "outputs")
        return SC_OK, ""

    def collective(self, region: SharedRegion, message: dict[str, Any]) -> tuple[int, str]:
        assert isinstance(self.descriptor, CollectiveDescriptor)  # _answer routes collective requests here only
        refused = batch_mod.collective_refusal(self.descriptor, message)
        if refused is not None:
            return refused
        views = batch_mod.collective_views(region, message)
        p = batch_mod.CollectiveProblem(self.descriptor, message, views)
        returned = self.fn(p)
        if returned is not None:
            result = np.asarray(returned)
            rows = [result] * p.world_size if result.ndim == 1 else list(result)
            if len(rows) != p.world_size:
                raise batch_mod.SubjectError(
                    SC_ERR_INTERNAL, f"the callable returned {len(rows)} ranks' outputs for {p.world_size} ranks"
                )
            for r, out in enumerate(p.outputs):
                self._write(out, rows[r], np.float32, f"rank {r} outputs")
        return SC_OK, ""

    def _write(self, view: np.ndarray, values: Any, dtype: Any, what: str) -> None:
        if not isinstance(values, np.ndarray) and not _is_torch(values) and hasattr(values, "__dlpack__"):
            values = _from_dlpack(values)  # CuPy, JAX, ...: host arrays to numpy, device ones to torch
        if _is_torch(values):
            if values.numel() != view.size:
                raise batch_mod.SubjectError(
                    SC_ERR_INTERNAL, f"the callable returned {values.numel()} {what} for {view.size} outputs"
                )
            from . import device

            device.copy_into(view, values)  # straight from the device into the shared region
            return
        host = np.asarray(values).astype(dtype, copy=False)
        if host.size != view.size:
            raise batch_mod.SubjectError(
                SC_ERR_INTERNAL, f"the callable returned {host.size} {what} for {view.size} outputs"
            )
        view.reshape(-1)[:] = host.reshape(-1)
