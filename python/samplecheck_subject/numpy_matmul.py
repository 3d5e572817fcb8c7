"""A bf16 matmul in numpy for the protocol tests: float64 products and sums (one BLAS
dgemm), plus the bias, rounded to float32 then bf16.

Batch-invariant in practice, not by construction: a bf16 x bf16 product is exact in
float64, and a float64 sum of K such products errs by about K * 2^-53 of its magnitude,
so two summation orders (a BLAS's blocking can depend on M) give the same bf16 unless the
exact sum lies within that distance of a bf16 rounding boundary, about 2^-40 per output."""

from __future__ import annotations

import numpy as np

from .batch import MatmulProblem
from .descriptor import MatmulDescriptor
from .numeric import bf16_to_f32, f32_to_bf16
from .serve import Pair


def float64_matmul(p: MatmulProblem) -> np.ndarray:
    a = bf16_to_f32(p.a).astype(np.float64)
    w = bf16_to_f32(p.weight).astype(np.float64)
    out = a @ w.T
    if p.bias is not None:
        out += bf16_to_f32(p.bias)
    return f32_to_bf16(out.astype(np.float32))


DESCRIPTOR = MatmulDescriptor(name="numpy.float64_matmul", description="numpy: float64 dgemm, then float32, then bf16")


def subjects() -> list[Pair]:
    return [(float64_matmul, DESCRIPTOR)]
