"""A top-k / top-p sampler in numpy, drawing from a numpy Generator it seeds from the call."""

import hashlib

import numpy as np

from samplecheck_subject import SamplerDescriptor

DESCRIPTOR = SamplerDescriptor(
    name="example.topk_topp",
    description="numpy: top-k, then top-p of what is left, inverse CDF on a seeded Generator",
    input_kind="probs",  # rows of probabilities (any positive scale)
    input_dtypes=("f32",),
    filters=("top_k", "top_p"),
    filter_order="top_k_first",  # top-p judges the mass of what top-k kept
    tie_policy="lowest_index",  # of tokens tied at the k-th, the lower ids stay
    rng_policy="subject_generator",  # its own generator, not the caller's Philox streams
)


def generator_for(batch):
    """The same call (seeds, subsequences, offsets, row map) gets the same generator, so a
    call replays to the same tokens, and different calls draw independently."""
    h = hashlib.blake2b(digest_size=8)
    for a in (batch.seed, batch.subsequence, batch.offset, batch.row_index):
        h.update(b"-" if a is None else a.tobytes())
    return np.random.default_rng(int.from_bytes(h.digest(), "little"))


def kept(row, top_k, top_p):
    """The token ids the filters keep, most probable first; None for a row that is no
    distribution (NaN, Inf, negative, all zero)."""
    if not np.isfinite(row).all() or (row < 0).any() or not row.sum(dtype=np.float64) > 0:
        return None
    order = np.argsort(-row, kind="stable")  # stable: ties keep the lower id first
    if 0 < top_k < row.size:
        order = order[:top_k]
    if top_p < 1.0:
        mass = np.cumsum(row[order], dtype=np.float32)
        before = np.concatenate(([np.float32(0)], mass[:-1]))
        order = order[before < np.float32(top_p) * mass[-1]]  # needed while short of p
    return order[row[order] > 0]


def sample(batch):
    """One token per output row; valid 0 where the input row is no distribution."""
    rows = batch.rows()
    n = batch.num_output_rows
    input_row = np.arange(n) if batch.row_index is None else batch.row_index
    # One uniform per output slot, drawn before any row is looked at: a slot's draw does not
    # depend on what the other rows hold (degenerate_rows compares exactly that).
    uniforms = generator_for(batch).random(n)
    tokens, valid = np.zeros(n, np.int32), np.zeros(n, np.uint8)
    for i in np.unique(input_row):  # filter each input row once, draw all its outputs
        outputs = np.flatnonzero(input_row == i)
        order = kept(
            rows[i],
            int(batch.top_k[i]) if batch.top_k is not None else 0,
            float(batch.top_p[i]) if batch.top_p is not None else 1.0,
        )
        if order is None:
            continue
        cdf = np.cumsum(rows[i][order], dtype=np.float64)
        u = uniforms[outputs] * cdf[-1]
        tokens[outputs] = order[np.minimum(np.searchsorted(cdf, u, side="right"), order.size - 1)]
        valid[outputs] = 1
    return tokens, valid
