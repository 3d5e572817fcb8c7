"""The torch sampling rules of SGLang and vLLM, written here from their algorithms (no
upstream code): SGLang v0.5.19's multinomial, v0.5.20's Gumbel-max (spelled as seed 000
prints them), SGLang's sort-based top-k / top-p / min-p and vLLM's top-k / top-p path.

None of them takes the caller's Philox stream: they draw from a torch.Generator. Each
subject owns one, seeded per call from the call's (seed, subsequence, offset, row_index),
so the declared contract is rng_policy "subject_generator": the statistical checks apply,
and replay means "same seeds, same batch, same tokens". (SGLang itself draws from the
device's default generator; a seeded generator is what makes its tokens replayable.)

torch imports lazily, at the first call: the descriptors need no torch (and its tensors and
generators are typed Any here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..batch import SampleBatch, SubjectError
from ..descriptor import SamplerDescriptor
from ..protocol import SC_ERR_INVALID_ARGUMENT
from ..serve import Pair, Roster
from . import common

# A rule's per-row parameters (tensors by name; None for an unfiltered rule), and the parts of
# its filtered rows a draw rule takes.
Params = dict[str, Any]
Filtered = tuple[Any, ...]
FilterRule = Callable[[Any, Params], Filtered]
DrawRule = Callable[[Filtered, Any, Any], Any]
Served = Callable[[SampleBatch], tuple[Any, None]]


def _refuse_degenerate(probs: Any) -> None:
    """torch.multinomial refuses NaN / Inf / negative / all-zero rows (RuntimeError on the
    host, a device-side assert on CUDA that poisons the process's context); refuse them
    before the launch, as the declared degenerate_rows "error"."""
    import torch

    bad = ~torch.isfinite(probs).all(dim=1) | (probs < 0).any(dim=1) | (probs.sum(dim=1) <= 0)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise SubjectError(
            SC_ERR_INVALID_ARGUMENT, f"input row {row} is NaN, Inf, negative or all zero: torch.multinomial refuses it"
        )


def sglang_v0519_multinomial(probs: Any, params: Params | None, g: Any) -> Any:
    import torch

    # SGLang v0.5.19, sampling_from_probs_torch: sampled_index = torch.multinomial(probs, num_samples=1)
    sampled_index = torch.multinomial(probs, num_samples=1, generator=g)
    return sampled_index.view(-1)


def sglang_v0520_gumbel(probs: Any, params: Params | None, g: Any) -> Any:
    import torch

    # SGLang v0.5.20 (SGLANG_OPT_USE_GUMBEL_SAMPLE on), the three lines of seed 000:
    q = torch.empty_like(probs, dtype=torch.float32).exponential_(1.0, generator=g)
    q.clamp_min_(torch.finfo(torch.float32).tiny)
    sampled_index = (probs.float() / q).argmax(dim=-1, keepdim=True)
    return sampled_index.view(-1)


def sglang_filter(probs: Any, params: Params) -> Filtered:
    """SGLang's filtered path, the filtering: sort descending, cumulative sum of the sorted
    row, then zero ranks >= top_k, tokens whose preceding mass exceeds top_p (on the
    unfiltered cumulative sum: both filters judge the original row, the joint order) and
    tokens below min_p times the largest. Returns the filtered sorted rows and the sort."""
    import torch

    probs = probs.float()
    v = probs.shape[1]
    probs_sort, probs_idx = probs.sort(dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    rank = torch.arange(v, device=probs.device).view(1, -1)
    probs_sort[rank >= params["top_k"].view(-1, 1)] = 0.0
    probs_sort[(probs_sum - probs_sort) > params["top_p"].view(-1, 1)] = 0.0
    probs_sort[probs_sort < (probs_sort[:, 0] * params["min_p"]).view(-1, 1)] = 0.0
    return probs_sort, probs_idx


def sglang_draw(filtered: Filtered, rows: Any, g: Any) -> Any:
    """SGLang's filtered path, the draw for output rows `rows` of the filtered rows:
    multinomial over what is left, mapped back through the sort."""
    import torch

    probs_sort, probs_idx = filtered
    sampled = torch.multinomial(probs_sort.index_select(0, rows), num_samples=1, generator=g)
    return probs_idx[rows, sampled.view(-1)]


def vllm_filter(logits: Any, params: Params) -> Filtered:
    """vLLM's path, the filtering: logits in float32 divided by temperature (0: greedy
    argmax), top-k as a threshold at the k-th largest logit (ties with it stay), then top-p
    on the softmax of what top-k left (sorted ascending: a token goes when the mass at and
    below it is <= 1 - p; the largest always stays). Returns the softmax of the filtered
    logits, their argmax and the greedy rows."""
    import torch

    logits = logits.to(torch.float32)
    v = logits.shape[1]
    t = params["temperature"]
    greedy = t == 0
    logits = logits / torch.where(greedy, torch.ones_like(t), t).view(-1, 1)
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    if params["top_k_on"]:
        kth = logits_sort.gather(1, (v - params["top_k"]).view(-1, 1))
        logits_sort.masked_fill_(logits_sort < kth, -float("inf"))
    if params["top_p_on"]:
        probs_sum = torch.cumsum(logits_sort.softmax(dim=-1), dim=-1)
        drop = probs_sum <= 1 - params["top_p"].view(-1, 1)
        drop[:, -1] = False
        logits_sort.masked_fill_(drop, -float("inf"))
    logits = logits_sort.scatter(dim=-1, index=logits_idx, src=logits_sort)
    return logits.softmax(dim=-1), logits.argmax(dim=-1), greedy


def vllm_draw(filtered: Filtered, rows: Any, g: Any) -> Any:
    """vLLM's path, the draw for output rows `rows`: Gumbel-max through an Exp(1) draw,
    argmax(probs / q); a greedy row takes the argmax."""
    import torch

    probs, argmax, greedy = filtered
    p = probs.index_select(0, rows)
    q = torch.empty_like(p).exponential_(1.0, generator=g)
    sampled = p.div_(q).argmax(dim=-1)
    return torch.where(greedy.index_select(0, rows), argmax.index_select(0, rows), sampled)


def _chunk_rows(vocab_size: int) -> int:
    """Rows per chunk: at most 2^29 elements of a row-sized temporary at a time."""
    return max(1, (1 << 29) // vocab_size)


def _filter_rows(filter_rule: FilterRule, rows: Any, params: Params, flags: dict[str, bool]) -> Filtered:
    """filter_rule over `rows` in chunks; the chunks' results concatenated per field (the rule
    treats rows independently, so a row's result does not depend on its chunk)."""
    import torch

    step = _chunk_rows(rows.shape[1])
    parts = []
    for start in range(0, rows.shape[0], step):
        part = {name: values[start : start + step] for name, values in params.items()}
        parts.append(filter_rule(rows[start : start + step], {**part, **flags}))
    return tuple(torch.cat(field) for field in zip(*parts))


def _served(
    filter_rule: FilterRule, draw_rule: DrawRule, refuses_degenerate: bool, per_output_row: bool = False
) -> Served:
    """The callable for a filtered rule. The filtering is a deterministic function of an input
    row and its parameters, so it runs once per input row, and each output row draws from
    its input row's filtered row; its tokens are those of the rule applied to one row per
    output (as SGLang's and vLLM's batches are laid out; per_output_row=True does exactly
    that, and python/tests/test_torch_adapters.py compares the two token for token). Output
    rows in chunks of at most 2^29 elements; one generator for the call."""

    def fn(b: SampleBatch) -> tuple[Any, None]:
        import torch

        if refuses_degenerate:
            _refuse_degenerate(b.input.float())
        params = {
            "top_k": common.top_k_tensor(b).to(torch.int64),
            "top_p": common.float_tensor(b, "top_p", 1.0),
            "min_p": common.float_tensor(b, "min_p", 0.0),
            "temperature": common.float_tensor(b, "temperature", 1.0),
        }
        flags = {"top_k_on": b.top_k is not None, "top_p_on": b.top_p is not None}
        rows, source = (
            b.input,
            (torch.arange(b.num_output_rows, device="cuda") if b.row_index is None else b.row_index.long()),
        )
        if per_output_row:
            rows = rows.index_select(0, source)
            params = {name: values.index_select(0, source) for name, values in params.items()}
            source = torch.arange(b.num_output_rows, device="cuda")
        filtered = _filter_rows(filter_rule, rows, params, flags)
        g = common.generator_for(b)
        step = _chunk_rows(b.vocab_size)
        tokens = [draw_rule(filtered, source[start : start + step], g) for start in range(0, b.num_output_rows, step)]
        return torch.cat(tokens), None

    fn.__name__ = filter_rule.__name__
    return fn


def _one_row_per_output(rule: Callable[[Any, Params | None, Any], Any], refuses_degenerate: bool) -> Served:
    """The callable for a rule that takes one row per output and no filter (SGLang's
    unfiltered rules, spelled as seed 000 prints them); one generator for the call."""

    def fn(b: SampleBatch) -> tuple[Any, None]:
        import torch

        if refuses_degenerate:
            _refuse_degenerate(b.input.float())
        step = _chunk_rows(b.vocab_size)
        g = common.generator_for(b)
        tokens = []
        for start in range(0, b.num_output_rows, step):
            end = min(b.num_output_rows, start + step)
            rows = b.input[start:end] if b.row_index is None else b.input.index_select(0, b.row_index[start:end].long())
            tokens.append(rule(rows, None, g))
        return torch.cat(tokens), None

    fn.__name__ = rule.__name__
    return fn


def _descriptor(name: str, **kw: Any) -> SamplerDescriptor:
    base = {"memory_space": "cuda", "rng_policy": "subject_generator", "philox_outputs_per_call": 1}
    base.update(kw)
    return SamplerDescriptor(name=name, **base)


DESCRIPTORS: dict[str, Pair] = {
    "torch.sglang_v0519_multinomial": (
        _one_row_per_output(sglang_v0519_multinomial, True),
        _descriptor(
            "torch.sglang_v0519_multinomial",
            input_kind="probs",
            input_dtypes=("f32",),
            filters=(),
            degenerate_rows="error",
            description="SGLang v0.5.19: torch.multinomial(probs, num_samples=1)",
        ),
    ),
    "torch.sglang_v0520_gumbel": (
        _one_row_per_output(sglang_v0520_gumbel, False),
        _descriptor(
            "torch.sglang_v0520_gumbel",
            input_kind="probs",
            input_dtypes=("f32",),
            filters=(),
            degenerate_rows="undefined",
            description="SGLang v0.5.20: (probs.float() / Exp(1).clamp_min(tiny)).argmax()",
        ),
    ),
    "torch.sglang_filtered": (
        _served(sglang_filter, sglang_draw, True),
        _descriptor(
            "torch.sglang_filtered",
            input_kind="probs",
            input_dtypes=("f32",),
            filters=("top_k", "top_p", "min_p"),
            filter_order="joint",
            tie_policy="lowest_index",
            degenerate_rows="error",
            description="SGLang's sort-based top-k / top-p / min-p, then torch.multinomial",
        ),
    ),
    "torch.vllm_filtered": (
        _served(vllm_filter, vllm_draw, False),
        _descriptor(
            "torch.vllm_filtered",
            input_kind="logits",
            input_dtypes=("f32", "bf16", "f16"),
            filters=("top_k", "top_p", "temperature"),
            filter_order="top_k_first",
            tie_policy="keep_ties",
            degenerate_rows="undefined",
            description="vLLM's temperature, top-k threshold, top-p on the sort, Gumbel-max",
        ),
    ),
}


def subjects() -> Roster:
    unavailable = common.cuda_unavailable()
    if unavailable is None:
        common.warm_up()
    return list(DESCRIPTORS.values()), unavailable
