"""Philox4x32-10 with cuRAND's curand_init(seed, subsequence, offset) semantics, vectorised
in numpy, for Python subjects that promise the per-request streams of the ABI.

curand_init(seed, subsequence, offset): key = (seed lo, seed hi); output j of the stream is
word j % 4 of philox(counter = (block lo, block hi, subsequence lo, subsequence hi)) with
block = j / 4, and the first output drawn is number `offset`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox4x32_10(
    c0: npt.ArrayLike, c1: npt.ArrayLike, c2: npt.ArrayLike, c3: npt.ArrayLike, k0: npt.ArrayLike, k1: npt.ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The bijection on uint32 arrays (broadcast together); returns the four output words."""
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint32) for c in (c0, c1, c2, c3))
    k0, k1 = np.asarray(k0, dtype=np.uint32), np.asarray(k1, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for _ in range(10):
            p0 = c0.astype(np.uint64) * _M0
            p1 = c2.astype(np.uint64) * _M1
            hi0, lo0 = (p0 >> _32).astype(np.uint32), (p0 & _LO).astype(np.uint32)
            hi1, lo1 = (p1 >> _32).astype(np.uint32), (p1 & _LO).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
            k0 = k0 + _W0
            k1 = k1 + _W1
    return c0, c1, c2, c3


def stream_outputs(seed: npt.ArrayLike, subsequence: npt.ArrayLike, offset: npt.ArrayLike, count: int) -> np.ndarray:
    """[rows, count] uint32: outputs offset[r] .. offset[r] + count - 1 of stream (seed[r],
    subsequence[r]) for every row r (curand() called `count` times after curand_init)."""
    seed = np.asarray(seed, dtype=np.uint64).reshape(-1, 1)
    subsequence = np.broadcast_to(np.asarray(subsequence, dtype=np.uint64).reshape(-1, 1), seed.shape)
    position = np.asarray(offset, dtype=np.uint64).reshape(-1, 1) + np.arange(count, dtype=np.uint64)
    block, word = position >> np.uint64(2), (position & np.uint64(3)).astype(np.intp)
    words = philox4x32_10(
        (block & _LO).astype(np.uint32),
        (block >> _32).astype(np.uint32),
        (subsequence & _LO).astype(np.uint32),
        (subsequence >> _32).astype(np.uint32),
        (seed & _LO).astype(np.uint32),
        (seed >> _32).astype(np.uint32),
    )
    return np.choose(word, words)


def uniform_double(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """[0, 1) with 53 bits from two outputs: (hi << 21 ^ lo >> 11) * 2^-53."""
    bits = (hi.astype(np.uint64) << np.uint64(21)) ^ (lo.astype(np.uint64) >> np.uint64(11))
    return (bits & np.uint64((1 << 53) - 1)).astype(np.float64) * 2.0**-53


def curand_uniform(x: np.ndarray) -> np.ndarray:
    """cuRAND's curand_uniform in float32: x * 2^-32 + 2^-33, in (0, 1]."""
    return x.astype(np.float32) * np.float32(2.0**-32) + np.float32(2.0**-33)
