"""A stand-in for flashinfer.cake_sampling, our own numpy code (nothing of FlashInfer's): its
route function answers as cake's is documented to (fallback:dtype for 16-bit rows,
fallback:top_k_disabled for k off, fallback:top_k_gt_slab above SLAB, else pipeline), and its
sampler keeps exactly k, the lowest ids of a tie, on the pipeline and every tie at the k-th
on a fallback. Served through adapters.flashinfer_cake.sample_rows by `subjects` (host
descriptors, for samplecheck's ties check), with a lying twin that reports a fallback while
drawing by the pipeline's rule."""

from __future__ import annotations

from typing import Any

import numpy as np

from samplecheck_subject.adapters import common, flashinfer_cake
from samplecheck_subject.numpy_samplers import _invert, _kept, zero_cleaned

SLAB = 64


class FakeCake:
    """cake_sampling_route and top_k_top_p_sampling_from_probs over numpy arrays; `dtype` is
    the batch's ("f32", "bf16", "f16"), since the rows arrive as float32 here. Every call is
    recorded in `calls` and `routes_asked`."""

    def __init__(self, dtype: str = "f32", lie: bool = False) -> None:
        self.dtype, self.lie = dtype, lie
        self.calls: list[dict[str, Any]] = []
        self.routes_asked: list[tuple[Any, Any, int, str]] = []

    def _route(self, probs: np.ndarray, kmax: int) -> str:
        if self.dtype != "f32":
            return "fallback:dtype"
        if kmax <= 0 or kmax >= probs.shape[1]:
            return "fallback:top_k_disabled"
        if kmax > SLAB:
            return "fallback:top_k_gt_slab"
        return "pipeline"

    def cake_sampling_route(self, probs: np.ndarray, top_k: np.ndarray, top_k_max: int) -> str:
        route = self._route(probs, top_k_max)
        if self.lie and route == "pipeline":
            route = "fallback:top_k_gt_slab"
        self.routes_asked.append((probs, top_k, top_k_max, route))
        return route

    def top_k_top_p_sampling_from_probs(
        self,
        probs: np.ndarray,
        top_k: np.ndarray,
        top_p: np.ndarray,
        *,
        top_k_max: int,
        philox_seed: int,
        philox_offset: int,
    ) -> np.ndarray:
        route = self._route(probs, top_k_max)
        self.calls.append(
            {
                "probs": probs,
                "top_k": top_k,
                "top_p": top_p,
                "top_k_max": top_k_max,
                "philox_seed": philox_seed,
                "philox_offset": philox_offset,
                "route": route,
            }
        )
        tokens = np.zeros(probs.shape[0], np.int32)
        u = np.random.default_rng([philox_seed, philox_offset]).random(probs.shape[0])
        # One rule per distinct (row, k, p), found by a fingerprint of the row (a test double's
        # shortcut: the battery's rows differ in their sums against a fixed random vector).
        w = np.random.default_rng(0).random(probs.shape[1])
        clean = np.where(probs > 0, probs, 0).astype(np.float64)
        keys = np.stack([np.nan_to_num(clean @ w, posinf=-1.0), np.isposinf(probs).sum(1), top_k, top_p], axis=1)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        for g, r0 in enumerate(first):
            rows = np.flatnonzero(inverse.reshape(-1) == g)
            kept = _kept(
                zero_cleaned(probs[r0]), int(top_k[r0]), float(top_p[r0]), 0.0, None, keep_ties=route != "pipeline"
            )
            if kept is not None:
                order, cdf = kept
                hit = _invert(cdf, u[rows] * cdf[-1])
                tokens[rows] = hit if order is None else order[hit]
        return tokens


def numpy_call(b: Any, cake: FakeCake) -> tuple[Any, Any, list[int]]:
    """The adapter's call path with numpy arrays for torch's: rows, k (off -> V), p (off -> 1)."""
    v = b.vocab_size
    source = np.arange(b.num_output_rows) if b.row_index is None else b.row_index.astype(np.int64)
    k = np.full(b.num_input_rows, v, np.int32) if b.top_k is None else b.top_k.astype(np.int64)
    k = np.where((k <= 0) | (k >= v), v, k).astype(np.int32)
    p = np.ones(b.num_input_rows, np.float32) if b.top_p is None else b.top_p.astype(np.float32)
    b.host = {n: getattr(b, n) for n in ("seed", "subsequence", "offset", "row_index")}
    return flashinfer_cake.sample_rows(cake, b.rows(), source, k, p, common.generator_seed(b), np.concatenate)


def _served(lie: bool) -> Any:
    # Each chunk's route is what the fake's cake_sampling_route gives that chunk (its largest k),
    # so one row takes the pipeline in one call and a fallback in another, as under cake; the
    # ties check judges each draw by its own call's route. A liar reports fallback:top_k_gt_slab
    # where it draws by the pipeline's rule.
    def fn(b: Any) -> Any:
        tokens, valid, routes = numpy_call(b, FakeCake(b.input_dtype, lie))
        return tokens, valid, np.asarray(routes, np.uint8)

    return fn


def subjects() -> list[Any]:
    pairs = []
    for lie in (False, True):
        for fn, d in ((_served(lie), d) for _, d in flashinfer_cake.descriptors("host")):
            d.name = d.name.replace("flashinfer.cake", "fake.cake") + (":route_lied" if lie else "")
            pairs.append((fn, d))
    return pairs
