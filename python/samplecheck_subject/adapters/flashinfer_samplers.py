"""FlashInfer 0.7.2's flashinfer.sampling functions as subjects, called as its API documents
them (signatures read from the flashinfer-python 0.7.2.post1 wheel; no FlashInfer code here).

Every call passes per-row seed and offset tensors (int64, one per output row), `indices` =
the batch's row_index (parallel samples share an input row), per-input-row parameter
tensors, and return_valid=True where the function has it.

Declared contracts, from FlashInfer's docstrings and kernels:
 - rng_policy "batch_slot": "The output row index also feeds the Philox subsequence: moving
   the same seed and offset to a different batch slot changes the RNG stream" (the
   seed/offset docstrings). The probs kernels call curand_init(seed[r], r, offset[r]);
   sampling_from_logits keys Gumbel noise on subsequence r * V + token. The batch's
   subsequence array is therefore not used.
 - parameter_indexing "input_row": the kernels read top_k_arr[row_idx] / top_p_arr[row_idx]
   / min_p_arr[row_idx], row_idx = indices[r].
 - tie_policy "keep_ties": the pivot tests accept a token when fewer than k tokens are
   strictly larger, so every token tied with the k-th survives.
 - degenerate_rows "valid_flag" where return_valid exists, else "undefined".
 - probs_normalisation "assume_sum_one" for the probs functions: the kernels compare a
   uniform in [0, 1) with the row's running sum, without dividing by the row's total, so a row
   that sums to S < 1 gives 1 - S to its last positive token ("probs: Probabilities").
 - philox_outputs_per_call: what FlashInfer's own generator path reserves per row (32 for
   the rejection samplers, which draw one uniform per round; 1 for sampling_from_probs and
   min_p; 4 per subsequence for the Gumbel noise of sampling_from_logits).

`top_k_renorm_probs` / `top_p_renorm_probs` are served followed by sampling_from_probs (the
tokens drawn from the renormalised rows); their bitwise run-to-run and batch invariance
is probed by tools/scripts/h200_probes/renorm_determinism.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..batch import SampleBatch
from ..descriptor import DegenerateRows, Dtype, Filter, FilterOrder, InputKind, SamplerDescriptor
from ..serve import Pair, Roster
from . import common

# torch and FlashInfer are optional and imported at the first call: tensors are typed Any.
Sampled = tuple[Any, Any]

# Every sampling function's docstring: "This function expects float32 inputs" (its Python
# wrapper casts other dtypes with probs.float() and does not renormalise what the rounding
# left, so a bf16 / fp16 row is outside its promise; docs/h200/python-subjects-2026-12-01.md
# shows what happens).
DTYPES: tuple[Dtype, ...] = ("f32",)


def _fi() -> Any:
    import flashinfer.sampling as sampling

    return sampling


def _rng(b: SampleBatch) -> dict[str, Any]:
    return {"seed": b.seed, "offset": b.offset}


def _indices(b: SampleBatch) -> Any:
    return b.row_index  # int32 on the device, or None (identity)


def sampling_from_probs(b: SampleBatch) -> Sampled:
    return _fi().sampling_from_probs(b.input, indices=_indices(b), return_valid=True, **_rng(b))


def sampling_from_logits(b: SampleBatch) -> Sampled:
    return _fi().sampling_from_logits(b.input, indices=_indices(b), **_rng(b)), None


def top_k_sampling_from_probs(b: SampleBatch) -> Sampled:
    return _fi().top_k_sampling_from_probs(
        b.input, common.top_k_tensor(b), indices=_indices(b), return_valid=True, **_rng(b)
    )


def top_p_sampling_from_probs(b: SampleBatch) -> Sampled:
    return _fi().top_p_sampling_from_probs(
        b.input, common.float_tensor(b, "top_p", 1.0), indices=_indices(b), return_valid=True, **_rng(b)
    )


def min_p_sampling_from_probs(b: SampleBatch) -> Sampled:
    return _fi().min_p_sampling_from_probs(
        b.input, common.float_tensor(b, "min_p", 0.0), indices=_indices(b), return_valid=True, **_rng(b)
    )


def _top_k_top_p_from_probs(order: FilterOrder) -> Callable[[SampleBatch], Sampled]:
    def fn(b: SampleBatch) -> Sampled:
        return _fi().top_k_top_p_sampling_from_probs(
            b.input,
            common.top_k_tensor(b),
            common.float_tensor(b, "top_p", 1.0),
            indices=_indices(b),
            filter_apply_order=order,
            return_valid=True,
            **_rng(b),
        )

    fn.__name__ = f"top_k_top_p_sampling_from_probs_{order}"
    return fn


def _top_k_top_p_from_logits(order: FilterOrder) -> Callable[[SampleBatch], Sampled]:
    def fn(b: SampleBatch) -> Sampled:
        return _fi().top_k_top_p_sampling_from_logits(
            b.input,
            common.top_k_tensor(b),
            common.float_tensor(b, "top_p", 1.0),
            indices=_indices(b),
            filter_apply_order=order,
            **_rng(b),
        ), None

    fn.__name__ = f"top_k_top_p_sampling_from_logits_{order}"
    return fn


def top_k_renorm_then_sample(b: SampleBatch) -> Sampled:
    fi = _fi()
    renormed = fi.top_k_renorm_probs(b.input, common.top_k_tensor(b))
    return fi.sampling_from_probs(renormed, indices=_indices(b), return_valid=True, **_rng(b))


def top_p_renorm_then_sample(b: SampleBatch) -> Sampled:
    fi = _fi()
    renormed = fi.top_p_renorm_probs(b.input, common.float_tensor(b, "top_p", 1.0))
    return fi.sampling_from_probs(renormed, indices=_indices(b), return_valid=True, **_rng(b))


def _descriptor(
    name: str,
    input_kind: InputKind,
    filters: Sequence[Filter],
    outputs: int,
    degenerate: DegenerateRows,
    order: FilterOrder | None = None,
    description: str = "",
) -> SamplerDescriptor:
    return SamplerDescriptor(
        name=name,
        description=description,
        memory_space="cuda",
        input_kind=input_kind,
        input_dtypes=DTYPES,
        filters=filters,
        philox_outputs_per_call=outputs,
        filter_order=order,
        tie_policy="keep_ties" if "top_k" in filters else None,
        rng_policy="batch_slot",
        parameter_indexing="input_row",
        degenerate_rows=degenerate,
        probs_normalisation="assume_sum_one" if input_kind == "probs" else "renormalise",
    )


def _table() -> dict[str, Pair]:
    p, lg = "probs", "logits"
    rows = [
        ("sampling_from_probs", sampling_from_probs, p, (), 1, "valid_flag", None),
        ("sampling_from_logits", sampling_from_logits, lg, (), 4, "undefined", None),
        ("top_k_sampling_from_probs", top_k_sampling_from_probs, p, ("top_k",), 32, "valid_flag", None),
        ("top_p_sampling_from_probs", top_p_sampling_from_probs, p, ("top_p",), 32, "valid_flag", None),
        ("min_p_sampling_from_probs", min_p_sampling_from_probs, p, ("min_p",), 1, "valid_flag", None),
    ]
    for order in ("top_k_first", "joint"):
        rows.append(
            (
                f"top_k_top_p_sampling_from_probs.{order}",
                _top_k_top_p_from_probs(order),
                p,
                ("top_k", "top_p"),
                32,
                "valid_flag",
                order,
            )
        )
        rows.append(
            (
                f"top_k_top_p_sampling_from_logits.{order}",
                _top_k_top_p_from_logits(order),
                lg,
                ("top_k", "top_p"),
                32,
                "undefined",
                order,
            )
        )
    rows += [
        ("top_k_renorm_probs+sampling_from_probs", top_k_renorm_then_sample, p, ("top_k",), 1, "valid_flag", None),
        ("top_p_renorm_probs+sampling_from_probs", top_p_renorm_then_sample, p, ("top_p",), 1, "valid_flag", None),
    ]
    out = {}
    for short, fn, kind, filters, outputs, degenerate, order in rows:
        name = f"flashinfer.{short}"
        out[name] = (
            fn,
            _descriptor(
                name,
                kind,
                filters,
                outputs,
                degenerate,
                order,
                description=f"FlashInfer 0.7.2 flashinfer.sampling.{short}",
            ),
        )
    return out


DESCRIPTORS = _table()


def _first_calls() -> list[Callable[[], Any]]:
    """One small call of each kind: the JIT build and the kernels' first launch."""
    import torch

    fi = _fi()
    probs = torch.softmax(torch.randn(2, 128, device="cuda"), dim=-1)
    seed = torch.tensor([1, 2], dtype=torch.int64, device="cuda")
    offset = torch.zeros(2, dtype=torch.int64, device="cuda")
    k = torch.tensor([5, 5], dtype=torch.int32, device="cuda")
    p = torch.tensor([0.9, 0.9], device="cuda")
    return [
        lambda: fi.sampling_from_probs(probs, seed=seed, offset=offset),
        lambda: fi.top_k_top_p_sampling_from_probs(probs, k, p, filter_apply_order="joint", seed=seed, offset=offset),
        lambda: fi.top_k_renorm_probs(probs, k),
        lambda: fi.top_p_renorm_probs(probs, p),
    ]


def subjects() -> Roster:
    unavailable = common.cuda_unavailable("flashinfer.sampling")
    if unavailable is None:
        common.warm_up(_first_calls())
    return list(DESCRIPTORS.values()), unavailable
