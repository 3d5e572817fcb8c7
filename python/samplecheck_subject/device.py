"""Torch on the device, imported only by "cuda" subjects: the shared region's arrays become
CUDA tensors (one host-to-device copy of each view, no intermediate host copy), and
returned tensors are copied from the device straight into the region."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from .batch import MatmulProblem, SampleBatch

# What a "cuda" matmul subject keeps between calls: (operands_generation, weight, bias).
Operands = tuple[Optional[int], torch.Tensor, Optional[torch.Tensor]]

_INPUT_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def _cuda(view: np.ndarray | None, dtype: torch.dtype | None = None) -> torch.Tensor | None:
    """A numpy view of the region as a CUDA tensor; uint16 / uint64 bits keep their bits."""
    if view is None:
        return None
    if view.dtype == np.uint16:
        t = torch.from_numpy(view.view(np.int16))
        t = t.view(dtype) if dtype is not None else t
    elif view.dtype == np.uint64:
        t = torch.from_numpy(view.view(np.int64))  # FlashInfer takes int64 or uint64 seeds
    else:
        t = torch.from_numpy(view)
    return t.to("cuda", non_blocking=False)


def to_device(b: SampleBatch) -> None:
    """Replaces a SampleBatch's inputs with CUDA tensors (input in its true dtype); the
    numpy views stay in b.host (seeds for a subject-owned generator, say)."""
    b.host = {
        name: getattr(b, name)
        for name in ("input", "row_index", "top_k", "top_p", "min_p", "temperature", "seed", "subsequence", "offset")
    }
    dtype = _INPUT_DTYPES[b.input_dtype]
    b.input = _cuda(b.input, dtype if b.input_dtype != "f32" else None)
    b.row_index = _cuda(b.row_index)
    for name in ("top_k", "top_p", "min_p", "temperature", "seed", "subsequence", "offset"):
        setattr(b, name, _cuda(getattr(b, name)))


def matmul_to_device(p: MatmulProblem, cached: Operands | None) -> Operands:
    """a to the device every call; weight and bias only when operands_generation changes."""
    p.a = _cuda(p.a, torch.bfloat16)
    generation = p.operands_generation
    if cached is not None and generation is not None and cached[0] == generation:
        _, p.weight, p.bias = cached
    else:
        p.weight = _cuda(p.weight, torch.bfloat16)
        p.bias = _cuda(p.bias, torch.bfloat16)
    return generation, p.weight, p.bias


def copy_into(view: np.ndarray, tensor: torch.Tensor) -> None:
    """Copies a tensor (any device) into a numpy view of the region, converting its type."""
    src = tensor.detach().reshape(-1)
    flat = view.reshape(-1)
    if flat.dtype == np.uint16:  # bf16 outputs: bits
        if src.dtype != torch.bfloat16:
            src = src.to(torch.bfloat16)
        torch.from_numpy(flat.view(np.int16)).copy_(src.contiguous().view(torch.int16))
    else:
        torch.from_numpy(flat).copy_(src)
