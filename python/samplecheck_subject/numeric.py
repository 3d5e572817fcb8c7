"""bf16 / f16 bit patterns and float32, in numpy (which has no bfloat16)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .descriptor import Dtype


def decode(bits_or_f32: np.ndarray, dtype: Dtype) -> np.ndarray:
    """float32 values of an input array: f32 as is, bf16 / f16 from their uint16 bits."""
    if dtype == "f32":
        return bits_or_f32
    if dtype == "bf16":
        return (bits_or_f32.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype == "f16":
        return bits_or_f32.view(np.float16).astype(np.float32)
    raise ValueError(f"dtype {dtype!r} is not f32, bf16 or f16")


def bf16_to_f32(bits: np.ndarray) -> np.ndarray:
    return decode(bits, "bf16")


def f32_to_bf16(values: npt.ArrayLike) -> np.ndarray:
    """Round-to-nearest-even bf16 bits of float32 values; NaN stays a (quiet) NaN."""
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = (u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)
    out = rounded.astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        out[nan] = 0x7FC0
    return out
