"""What the torch and FlashInfer adapters share: availability, the per-input-row parameter
tensors with the ABI's "off" values, and the seed of a subject-owned generator.

torch is optional and imported inside the functions, so its tensors are typed Any here."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..batch import SampleBatch


def cuda_unavailable(*modules: str) -> str | None:
    """None when torch (and `modules`) import and a CUDA device is present, else the reason."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    for name in modules:
        try:
            __import__(name)
        except Exception as e:  # noqa: BLE001 - any import failure makes the adapter unavailable
            return f"{name} does not import: {type(e).__name__}: {e}"
    return None


def warm_up(calls: Iterable[Callable[[], object]] = ()) -> None:
    """Before the hello (samplecheck allows --handshake-timeout for it): CUDA's context, and
    each `call()` once (FlashInfer's first call JIT-builds its sampling module, ~90 s on the
    H200). A failure here ends the process before its hello: a loud error, never a skip."""
    import torch

    torch.zeros(1, device="cuda")
    for call in calls:
        call()
    torch.cuda.synchronize()


def top_k_tensor(b: SampleBatch, rows: int | None = None) -> Any:
    """int32 top_k per row on the device, 0 and >= V (off) mapped to V."""
    import torch

    rows = b.num_input_rows if rows is None else rows
    v = b.vocab_size
    if b.top_k is None:
        return torch.full((rows,), v, dtype=torch.int32, device="cuda")
    k = b.top_k.to(torch.int64)
    return torch.where((k <= 0) | (k >= v), torch.full_like(k, v), k).to(torch.int32)


def float_tensor(b: SampleBatch, name: str, off: float, rows: int | None = None) -> Any:
    """float32 parameter per row on the device; None in the batch is the "off" value."""
    import torch

    rows = b.num_input_rows if rows is None else rows
    values = getattr(b, name)
    if values is None:
        return torch.full((rows,), off, dtype=torch.float32, device="cuda")
    return values.float()


def by_output_row(values: Any, b: SampleBatch) -> Any:
    """Per-input-row values expanded to one per output row (for rules that take them so)."""
    return values if b.row_index is None else values.index_select(0, b.row_index.long())


def generator_seed(b: SampleBatch) -> int:
    """A 63-bit seed from the call's seeds, subsequences, offsets and row map: the same call
    gives the same generator, so "same seeds, same batch, same tokens" holds."""
    return call_seed(*(b.host[name] for name in ("seed", "subsequence", "offset", "row_index")))


def call_seed(
    seed: np.ndarray | None, subsequence: np.ndarray | None, offset: np.ndarray | None, row_index: np.ndarray | None
) -> int:
    """generator_seed of a call's arrays (None: not sent); standalone scripts inline its source,
    so its annotations name numpy alone (evaluated there as written)."""
    h = hashlib.blake2b(digest_size=8)
    for name, a in (("seed", seed), ("subsequence", subsequence), ("offset", offset), ("row_index", row_index)):
        h.update(name.encode())
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    return int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)


def generator_for(b: SampleBatch) -> Any:
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(generator_seed(b))
    return g
