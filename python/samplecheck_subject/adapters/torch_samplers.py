"""The torch sampling rules of SGLang and vLLM, written here from their algorithms (no
upstream code): SGLang v0.5.19's multinomial, v0.5.20's Gumbel-max (spelled as seed 000
prints them), SGLang's sort-based top-k / top-p / min-p and vLLM's top-k / top-p path.

None of them takes the caller's Philox stream: they draw from a torch.Generator. Each
subject owns one, seeded per call from the call's (seed, subsequence, offset, row_index),
so the declared contract is rng_policy "subject_generator": the statistical checks apply,
and replay means "same seeds, same batch, same tokens". (SGLang itself draws from the
device's default generator; a seeded generator is what makes its tokens replayable.)

torch imports lazily, at the first call: the descriptors need no torch.
"""

from ..descriptor import SamplerDescriptor
from ..batch import SubjectError
from ..protocol import SC_ERR_INVALID_ARGUMENT
from . import common


def _refuse_degenerate(probs):
    """torch.multinomial refuses NaN / Inf / negative / all-zero rows (RuntimeError on the
    host, a device-side assert on CUDA that poisons the process's context); refuse them
    before the launch, as the declared degenerate_rows "error"."""
    import torch

    bad = ~torch.isfinite(probs).all(dim=1) | (probs < 0).any(dim=1) | (probs.sum(dim=1) <= 0)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise SubjectError(SC_ERR_INVALID_ARGUMENT,
                           f"input row {row} is NaN, Inf, negative or all zero: torch.multinomial refuses it")


def sglang_v0519_multinomial(probs, params, g):
    import torch

    # SGLang v0.5.19, sampling_from_probs_torch: sampled_index = torch.multinomial(probs, num_samples=1)
    sampled_index = torch.multinomial(probs, num_samples=1, generator=g)
    return sampled_index.view(-1)


def sglang_v0520_gumbel(probs, params, g):
    import torch

    # SGLang v0.5.20 (SGLANG_OPT_USE_GUMBEL_SAMPLE on), the three lines of seed 000:
    q = torch.empty_like(probs, dtype=torch.float32).exponential_(1.0, generator=g)
    q.clamp_min_(torch.finfo(torch.float32).tiny)
    sampled_index = (probs.float() / q).argmax(dim=-1, keepdim=True)
    return sampled_index.view(-1)


def sglang_filtered(probs, params, g):
    """SGLang's filtered path: sort descending, cumulative sum of the sorted row, then zero
    ranks >= top_k, tokens whose preceding mass exceeds top_p (on the unfiltered cumulative
    sum: both filters judge the original row, the joint order) and tokens below min_p times
    the largest; multinomial over what is left, mapped back through the sort."""
    import torch

    probs = probs.float()
    v = probs.shape[1]
    probs_sort, probs_idx = probs.sort(dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    rank = torch.arange(v, device=probs.device).view(1, -1)
    probs_sort[rank >= params["top_k"].view(-1, 1)] = 0.0
    probs_sort[(probs_sum - probs_sort) > params["top_p"].view(-1, 1)] = 0.0
    probs_sort[probs_sort < (probs_sort[:, 0] * params["min_p"]).view(-1, 1)] = 0.0
    sampled = torch.multinomial(probs_sort, num_samples=1, generator=g)
    return torch.gather(probs_idx, dim=1, index=sampled).view(-1)


def vllm_filtered(logits, params, g):
    """vLLM's path: logits in float32 divided by temperature (0: greedy argmax), top-k as a
    threshold at the k-th largest logit (ties with it stay), then top-p on the softmax of what
    top-k left (sorted ascending: a token goes when the mass at and below it is <= 1 - p; the
    largest always stays), then Gumbel-max through an Exp(1) draw: argmax(probs / q)."""
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
    probs = logits.softmax(dim=-1)
    q = torch.empty_like(probs).exponential_(1.0, generator=g)
    sampled = probs.div_(q).argmax(dim=-1)
    return torch.where(greedy, logits.argmax(dim=-1), sampled)


def _served(rule, refuses_degenerate):
    """The callable for a rule that takes one row per output (as SGLang's and vLLM's batches
    are laid out): output rows in chunks of at most 2^29 elements (a request's draws do not
    depend on the chunk: the rule treats rows independently), parameters per output row, one
    generator for the call."""

    def fn(b):
        import torch

        if refuses_degenerate:
            _refuse_degenerate(b.input.float())
        params = {
            "top_k": common.by_output_row(common.top_k_tensor(b), b).to(torch.int64),
            "top_p": common.by_output_row(common.float_tensor(b, "top_p", 1.0), b),
            "min_p": common.by_output_row(common.float_tensor(b, "min_p", 0.0), b),
            "temperature": common.by_output_row(common.float_tensor(b, "temperature", 1.0), b),
        }
        flags = {"top_k_on": b.top_k is not None, "top_p_on": b.top_p is not None}
        g = common.generator_for(b)
        chunk = max(1, (1 << 29) // b.vocab_size)
        tokens = []
        for start in range(0, b.num_output_rows, chunk):
            end = min(b.num_output_rows, start + chunk)
            rows = (b.input[start:end] if b.row_index is None
                    else b.input.index_select(0, b.row_index[start:end].long()))
            part = {name: values[start:end] for name, values in params.items()}
            tokens.append(rule(rows, {**part, **flags}, g))
        return torch.cat(tokens), None

    fn.__name__ = rule.__name__
    return fn


def _descriptor(name, **kw):
    base = dict(memory_space="cuda", rng_policy="subject_generator", philox_outputs_per_call=1)
    base.update(kw)
    return SamplerDescriptor(name=name, **base)


DESCRIPTORS = {
    "torch.sglang_v0519_multinomial": (_served(sglang_v0519_multinomial, True), _descriptor(
        "torch.sglang_v0519_multinomial", input_kind="probs", input_dtypes=("f32",), filters=(),
        degenerate_rows="error",
        description="SGLang v0.5.19: torch.multinomial(probs, num_samples=1)")),
    "torch.sglang_v0520_gumbel": (_served(sglang_v0520_gumbel, False), _descriptor(
        "torch.sglang_v0520_gumbel", input_kind="probs", input_dtypes=("f32",), filters=(),
        degenerate_rows="undefined",
        description="SGLang v0.5.20: (probs.float() / Exp(1).clamp_min(tiny)).argmax()")),
    "torch.sglang_filtered": (_served(sglang_filtered, True), _descriptor(
        "torch.sglang_filtered", input_kind="probs", input_dtypes=("f32",),
        filters=("top_k", "top_p", "min_p"), filter_order="joint", tie_policy="lowest_index",
        degenerate_rows="error",
        description="SGLang's sort-based top-k / top-p / min-p, then torch.multinomial")),
    "torch.vllm_filtered": (_served(vllm_filtered, False), _descriptor(
        "torch.vllm_filtered", input_kind="logits", input_dtypes=("f32", "bf16", "f16"),
        filters=("top_k", "top_p", "temperature"), filter_order="top_k_first", tie_policy="keep_ties",
        degenerate_rows="undefined",
        description="vLLM's temperature, top-k threshold, top-p on the sort, Gumbel-max")),
}


def subjects():
    unavailable = common.cuda_unavailable()
    if unavailable is None:
        common.warm_up()
    return list(DESCRIPTORS.values()), unavailable
