"""A bf16 matmul in numpy for the protocol tests: every output row is its own float64 dot
products (one gemv per row, so the order of a row's sums never depends on M), plus the
bias, rounded to float32 then bf16: batch-invariant by construction."""

import numpy as np

from .descriptor import MatmulDescriptor
from .numeric import bf16_to_f32, f32_to_bf16


def rowwise_matmul(p):
    a = bf16_to_f32(p.a).astype(np.float64)
    w = bf16_to_f32(p.weight).astype(np.float64)
    out = np.empty((p.m, p.n), dtype=np.float32)
    for r in range(p.m):
        row = w @ a[r]
        if p.bias is not None:
            row = row + bf16_to_f32(p.bias)
        out[r] = row.astype(np.float32)
    return f32_to_bf16(out)


DESCRIPTOR = MatmulDescriptor(name="numpy.rowwise_matmul",
                              description="numpy: one float64 gemv per output row, then bf16")


def subjects():
    return [(rowwise_matmul, DESCRIPTOR)]
