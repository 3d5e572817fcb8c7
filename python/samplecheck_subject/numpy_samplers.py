"""A sort-based sampler in numpy on the ABI's per-request Philox streams, and the same
sampler with one catalog defect planted (docs/bug-catalog.md, kernels/mutant_catalog.h):
the Python subjects the protocol tests judge.

The rule (as SGLang's and vLLM's filtered paths spell it): sort the row descending (stable,
so ties keep the lower ids: lowest_index), keep the top k, then the smallest prefix whose
float32 cumulative mass reaches top_p of theirs (top_k_first), then the tokens at or above
min_p times the largest; draw u in [0, 1) from two stream outputs (53 bits) and invert the
cumulative sum (float64) of what is kept.
"""

import hashlib
import inspect
from typing import Any, Callable, Optional

import numpy as np
import numpy.typing as npt

from . import philox
from .batch import SampleBatch, SubjectError
from .descriptor import Route, SamplerDescriptor
from .philox import stream_outputs, uniform_double
from .protocol import SC_ERR_INVALID_ARGUMENT
from .script_call import ScriptCall
from .serve import Pair

# No `from __future__ import annotations` here: _kept's and _invert's source is inlined into
# standalone scripts (SCRIPT_CALLS below), where their annotations are evaluated as written,
# so theirs name numpy alone or are strings.

# What the sampler callables return: (tokens, valid) or, routed, (tokens, valid, routes).
Sampled = tuple[np.ndarray, ...]

FLT_MAX = np.float32(np.finfo(np.float32).max)

# The defects planted here, each the mechanism of its catalog row.
PLANTED = {
    "S02": "the Philox offset is frozen at 0: every call draws the same numbers",
    "S03": "seed and offset arrays read at element 0 for every request",
    "S04": "stream keyed by the row's batch position, not the request",
    "S06": "keeps every tie at the k-th probability while declaring lowest_index",
    "S07": "drops the token that carries the cumulative sum across p",
    "S08": "NaN or all-zero rows return token 0 marked valid",
    "S09": "filter parameters read by output row, not input row",
    "S10": "outputs sharing an input row share one random draw",
    "S11": "tokens below 1e-5 of the row's mass are dropped before the draw",
    "X01": "u from a generator of the subject's own that moves every call, not the request's stream",
}
# X01's generator: process-wide state that every call advances (a global torch.Generator's).
_HIDDEN_STATE = np.random.default_rng(20261205)


def descriptor(name: str = "numpy.sort_filter", planted: Optional[str] = None, **contract: Any) -> SamplerDescriptor:
    what = PLANTED[planted] if planted else "sort, filter (top-k, top-p, min-p), invert the CDF"
    return SamplerDescriptor(
        name=name if planted is None else f"{name}:{planted}",
        description=f"numpy: {what}",
        **contract,
        input_kind="probs",
        input_dtypes=("f32", "bf16", "f16"),
        filters=("top_k", "top_p", "min_p"),
        filter_order="top_k_first",
        tie_policy="lowest_index",
        philox_outputs_per_call=2,
    )


def _kept(
    row: np.ndarray, top_k: int, top_p: float, min_p: float, planted: "str | None", keep_ties: bool = False
) -> "tuple[np.ndarray | None, np.ndarray] | None":
    """(token ids kept in sampling order, float64 cumulative mass) or None if degenerate;
    keep_ties: every tie at the k-th survives, and the whole tie group the top-p cut falls in
    (FlashInfer's pivot rule: the routed sampler's fallback)."""
    vocab = row.size
    if not np.isfinite(row).all() or (row < 0).any():
        return None
    total = float(row.sum(dtype=np.float64))
    if not 0.0 < total <= FLT_MAX:
        return None
    if planted == "S11" and (row >= 1e-5 * total).any():  # the tiny tail renormalised away
        row = np.where(row >= 1e-5 * total, row, np.float32(0))
    k_on = 0 < top_k < vocab
    p_on = top_p < 1.0
    m_on = min_p > 0.0
    if not (k_on or p_on or m_on):
        return None, np.cumsum(row, dtype=np.float64)
    order = np.argsort(-row, kind="stable")
    keep = vocab
    if k_on:
        keep = int(top_k)
        if planted == "S06" or keep_ties:  # every tie with the k-th survives
            while keep < vocab and row[order[keep]] == row[order[keep - 1]]:
                keep += 1
    if p_on:
        top = keep
        cumulative = np.cumsum(row[order[:keep]], dtype=np.float32)
        threshold = np.float32(top_p) * cumulative[-1]
        if planted == "S07":  # a token stays only if the sum through it stays within p
            keep = 1 + int(np.count_nonzero(cumulative[1:] <= threshold))
        else:  # a token is needed while the mass before it is short of p
            before = np.concatenate(([np.float32(0)], cumulative[:-1]))
            keep = int(np.count_nonzero(before < threshold))
        while keep_ties and 0 < keep < top and row[order[keep]] == row[order[keep - 1]]:
            keep += 1
    if m_on:
        threshold = np.float32(min_p) * row[order[0]]
        keep = int(np.count_nonzero(row[order[:keep]] >= threshold))
    order = order[:keep]
    cdf = np.cumsum(row[order], dtype=np.float64)
    if keep == 0 or cdf[-1] <= 0.0:
        return None
    return order, cdf


def _invert(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The first entry above u; past the end (rounding), the last entry with mass."""
    hit = np.searchsorted(cdf, u, side="right")
    past = hit >= cdf.size
    if past.any():
        positive = np.flatnonzero(np.diff(np.concatenate(([0.0], cdf))) > 0)
        hit[past] = positive[-1]
    return hit


# Defects of the ABI 1.5 contracts, planted in the subjects that declare them (contract_subjects).
CONTRACT_PLANTED = {
    "position_ignored": "request_keyed, but the key ignores the position: every token of a request "
    "draws the same noise (S02 in hash form)",
    "nan_largest": "treat_as_zero, but a NaN entry counts as the row's largest probability",
    "nan_filtered": "treat_as_zero unfiltered, but under top-k (another route, as FlashInfer's cake "
    "sampler takes) a NaN entry counts as the row's largest probability",
    "route_lied": "keeps every tie at the k-th for k > ROUTE_K while reporting route 'sort' (lowest_index)",
}
# The routed sampler's fallback threshold (FlashInfer's cake sampler falls back for k > 1024):
# small, so that the ties check's rows (k 2, 3, 5, 9) reach both routes.
ROUTE_K = 4
ROUTES = (Route("sort", "lowest_index"), Route("fallback", "keep_ties"))


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, wrapping in uint64: a keyed hash as vLLM's and SGLang's are."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def keyed_uniform(seed: npt.ArrayLike, position: npt.ArrayLike) -> np.ndarray:
    """[0, 1) with 53 bits hashed from (seed, position): rng_policy "request_keyed"."""
    with np.errstate(over="ignore"):
        salted = np.asarray(position, np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    key = _mix64(np.asarray(seed, np.uint64) ^ _mix64(salted))
    return (key >> np.uint64(11)).astype(np.float64) * 2.0**-53


def zero_cleaned(row: np.ndarray, planted: "str | None" = None, top_k: int = 0) -> np.ndarray:
    """The row as degenerate_rows "treat_as_zero" reads it: +Inf entries alone if any (drawn
    uniformly), else NaN, negative and -0.0 entries set to 0 (top_k: the row's, for nan_filtered)."""
    if planted == "nan_largest" or (planted == "nan_filtered" and top_k > 0):
        finite = row[np.isfinite(row)]
        row = np.where(np.isnan(row), finite.max() if finite.size else np.float32(1), row)
    if np.isposinf(row).any():
        return np.isposinf(row).astype(np.float32)
    return np.where(row > 0, row, np.float32(0)).astype(np.float32)


def _uniforms(b: SampleBatch, source: np.ndarray, planted: Optional[str], slot_keyed: bool, keyed: bool) -> np.ndarray:
    """u in [0, 1) for every output row, from its Philox stream or, keyed, its (seed, position)."""
    n_out = b.num_output_rows
    if planted == "X01":
        return _HIDDEN_STATE.random(n_out)
    seed = b.seed[source]
    offset = b.offset[source]
    if keyed:
        return keyed_uniform(seed, np.zeros(n_out, np.uint64) if planted == "position_ignored" else offset)
    subsequence = np.zeros(n_out, np.uint64) if b.subsequence is None else b.subsequence[source]
    if planted == "S02":
        offset = np.zeros(n_out, np.uint64)
    if planted == "S04" or slot_keyed:
        subsequence = np.arange(n_out, dtype=np.uint64)
    words = stream_outputs(seed, subsequence, offset, 2)
    return uniform_double(words[:, 0], words[:, 1])


def make(
    planted: Optional[str] = None,
    slot_keyed: bool = False,
    keyed: bool = False,
    zero: bool = False,
    routed: bool = False,
) -> Callable[[SampleBatch], Sampled]:
    """The sampler callable; `planted` one of PLANTED's ids or None (the correct one).
    slot_keyed: the stream's subsequence is the output row (FlashInfer's rule), which is S04's
    mechanism; declared as rng_policy "batch_slot" it is a contract, not a defect. keyed: u
    hashed from (seed, position) (rng_policy "request_keyed"); zero: degenerate rows read by
    degenerate_rows "treat_as_zero"; routed: rows with k > ROUTE_K take route 1 (keep_ties), the
    rest route 0 (lowest_index), reported per output row. CONTRACT_PLANTED's ids plant theirs."""
    if planted is not None and planted not in PLANTED and planted not in CONTRACT_PLANTED:
        raise ValueError(f"no planted defect {planted!r}; known: {', '.join([*PLANTED, *CONTRACT_PLANTED])}")

    def sample(b: SampleBatch) -> Sampled:
        n_out, n_in = b.num_output_rows, b.num_input_rows
        rows = b.rows()
        input_of = np.arange(n_out) if b.row_index is None else b.row_index.astype(np.int64)
        param_of = np.arange(n_out) % n_in if planted == "S09" else input_of
        source = np.arange(n_out)
        if planted == "S03":
            source = np.zeros(n_out, dtype=np.int64)
        if planted == "S10":  # one draw per input row, shared by every output of that row
            _, first = np.unique(input_of, return_index=True)
            first_of = dict(zip(input_of[first].tolist(), first.tolist()))
            source = np.array([first_of[i] for i in input_of.tolist()], dtype=np.int64)
        u = _uniforms(b, source, planted, slot_keyed, keyed)

        tokens = np.zeros(n_out, np.int32)
        valid = np.zeros(n_out, np.uint8)
        routes = np.zeros(n_out, np.uint8)
        groups = {}
        for r, key in enumerate(zip(input_of.tolist(), param_of.tolist())):
            groups.setdefault(key, []).append(r)
        for (i, p), outputs in groups.items():
            outputs = np.asarray(outputs)
            k = int(b.top_k[p]) if b.top_k is not None else 0
            fallback = routed and ROUTE_K < k < b.vocab_size
            routes[outputs] = 1 if fallback and planted != "route_lied" else 0
            kept = _kept(
                zero_cleaned(rows[i], planted, k) if zero else rows[i],
                k,
                float(b.top_p[p]) if b.top_p is not None else 1.0,
                float(b.min_p[p]) if b.min_p is not None else 0.0,
                planted,
                keep_ties=fallback,
            )
            if kept is None:
                if planted == "S08":  # the degenerate row passes as token 0
                    valid[outputs] = 1
                continue
            order, cdf = kept
            hit = _invert(cdf, u[outputs] * cdf[-1])
            tokens[outputs] = hit if order is None else order[hit]
            valid[outputs] = 1
        return (tokens, valid, routes) if routed else (tokens, valid)

    return sample


def generator_sampler(b: SampleBatch) -> tuple[np.ndarray, None]:
    """Inverse CDF on a numpy Generator the subject owns, seeded from the whole call (seeds,
    subsequences, offsets, row map): rng_policy "subject_generator". Refuses degenerate
    rows with status 1: degenerate_rows "error"."""
    h = hashlib.blake2b(digest_size=8)
    for a in (b.seed, b.subsequence, b.offset, b.row_index):
        h.update(b"-" if a is None else a.tobytes())
    rng = np.random.default_rng(int.from_bytes(h.digest(), "little"))
    rows = b.rows().astype(np.float64)
    bad = ~np.isfinite(rows).all(axis=1) | (rows < 0).any(axis=1) | ~(rows.sum(axis=1) > 0)
    if bad.any():
        raise SubjectError(SC_ERR_INVALID_ARGUMENT, f"input row {int(np.flatnonzero(bad)[0])} is degenerate")
    input_of = np.arange(b.num_output_rows) if b.row_index is None else b.row_index
    cdf = np.cumsum(rows, axis=1)
    u = rng.random(b.num_output_rows) * cdf[input_of, -1]
    tokens = np.empty(b.num_output_rows, np.int32)
    for i in np.unique(input_of):
        outputs = np.flatnonzero(input_of == i)
        tokens[outputs] = _invert(cdf[i], u[outputs])
    return tokens, None


def contract_subjects() -> list[Pair]:
    """Correct subjects with other declared contracts: streams keyed by the batch slot (as
    FlashInfer's), and a subject-owned generator refusing degenerate rows (as torch's)."""
    slot = descriptor(name="numpy.sort_filter.batch_slot", rng_policy="batch_slot")
    generator = SamplerDescriptor(
        name="numpy.multinomial.generator",
        description="numpy: inverse CDF on a seeded numpy Generator",
        input_kind="probs",
        input_dtypes=("f32",),
        rng_policy="subject_generator",
        degenerate_rows="error",
    )
    keyed = descriptor(name="numpy.sort_filter.keyed", rng_policy="request_keyed")
    zero = descriptor(name="numpy.sort_filter.zero", degenerate_rows="treat_as_zero")
    routed = descriptor(name="numpy.sort_filter.routed", routes=ROUTES)
    return [
        (make(None, slot_keyed=True), slot),
        (generator_sampler, generator),
        (make(None, keyed=True), keyed),
        (make(None, zero=True), zero),
        (make("position_ignored", keyed=True), _contract_mutant(keyed, "position_ignored")),
        (make("nan_largest", zero=True), _contract_mutant(zero, "nan_largest")),
        (make("nan_filtered", zero=True), _contract_mutant(zero, "nan_filtered")),
        (make(None, routed=True), routed),
        (make("route_lied", routed=True), _contract_mutant(routed, "route_lied")),
    ]


def _contract_mutant(correct: SamplerDescriptor, planted: str) -> SamplerDescriptor:
    """The descriptor `correct` declares, under the name NAME:PLANTED and its defect's text."""
    contract = {"rng_policy": correct.rng_policy, "degenerate_rows": correct.degenerate_rows, "routes": correct.routes}
    d = descriptor(name=correct.name, **contract)
    d.name = f"{correct.name}:{planted}"
    d.description = f"numpy: {CONTRACT_PLANTED[planted]}"
    return d


def subjects() -> list[Pair]:
    """The correct sampler and every planted one, for `python -m samplecheck_subject.run`."""
    return [(make(None), descriptor())] + [(make(p), descriptor(planted=p)) for p in PLANTED]


# Standalone reproduction scripts (samplecheck_subject.repro_script): these subjects are
# this package's own code, which a script may not import, so the rule's functions travel
# as their source. The Philox stream is replaced by numpy's Generator: the checks a script
# reproduces (support, goodness_of_fit, ties, tail, degenerate_rows' drawn tokens) judge where
# draws land, not the stream.
_SORT_FILTER_DRAW = """
def tokens_for(row, params, u):
    \"\"\"The rule's token for each uniform u in [0, 1).\"\"\"
    row = zero_cleaned(row, PLANTED, int(params["top_k"])) if ZERO else row
    kept = _kept(row, int(params["top_k"]), float(params["top_p"]), float(params["min_p"]), PLANTED)
    if kept is None:
        raise ValueError("the rule finds the row degenerate: nothing to draw")
    order, cdf = kept
    hit = _invert(cdf, u * cdf[-1])
    return hit if order is None else order[hit]


def draw(row, params, n, seed, device):
    return tokens_for(row, params, np.random.default_rng(seed).random(n))
"""

_GENERATOR_DRAW = """
def draw(row, params, n, seed, device):
    cdf = np.cumsum(row, dtype=np.float64)
    return _invert(cdf, np.random.default_rng(seed).random(n) * cdf[-1])
"""


# The request scripts' call (repro_batch, repro_collision): slot i's u from its request's Philox
# stream, as make draws it (the stream's functions inlined from .philox), with the planted
# stream defects: S04's from the slot's subsequence, S02's at offset 0, S03's and S10's every
# slot from the first request (S10 shares its input row's draw; a script's batch is copies of
# one row, as the collision checks send one input row).
_BATCH_DRAW = """
def draw_requests(row, params, requests, device):
    if PLANTED == "X01":  # the subject's own generator, which every call advances
        return tokens_for(row, params, HIDDEN_STATE.random(len(requests)))
    seed, subsequence, offset = (np.array(words, dtype=np.uint64) for words in zip(*requests))
    if PLANTED == "S04":
        subsequence = np.arange(len(requests), dtype=np.uint64)
    if PLANTED == "S02":  # the offset frozen at 0
        offset = np.zeros_like(offset)
    if PLANTED in ("S03", "S10"):  # every request read at element 0; S10: the copies are one input row
        seed, subsequence, offset = (np.repeat(w[:1], len(requests)) for w in (seed, subsequence, offset))
    words = stream_outputs(seed, subsequence, offset, 2)
    return tokens_for(row, params, uniform_double(words[:, 0], words[:, 1]))
"""


def _batch_code() -> str:
    """_BATCH_DRAW with the Philox stream's source (its constants, then its functions)."""
    source = inspect.getsource(philox).splitlines()
    constants = [line for line in source if line.startswith(("_M0", "_W0", "_LO", "_32"))]
    functions = [inspect.getsource(f) for f in (philox.philox4x32_10, philox.stream_outputs, philox.uniform_double)]
    hidden = "HIDDEN_STATE = np.random.default_rng()  # X01's: a generator the calls advance\n"
    return "\n".join(constants) + "\n" + hidden + "\n\n" + "\n\n".join(functions) + "\n" + _BATCH_DRAW


def _script_call(planted: Optional[str], zero: bool = False) -> ScriptCall:
    """zero: degenerate rows read by treat_as_zero first (zero_cleaned), as make(zero=True) reads them.
    The correct rule, S04 (a slot-keyed stream) and X01 (a generator of its own) also script
    the checks of one request's two tokens (repro_batch); with S02, S03 and S10 (streams
    shared or frozen), the collision checks (repro_collision)."""
    code = "\n\n".join(
        [
            f"FLT_MAX = np.float32(np.finfo(np.float32).max)\nPLANTED = {planted!r}\nZERO = {zero}",
            inspect.getsource(_kept),
            inspect.getsource(_invert),
            inspect.getsource(zero_cleaned),
        ]
    )
    what = "samplecheck_subject.numpy_samplers' rule (_kept, _invert, zero_cleaned; their source inlined)"
    batch = _batch_code() if planted in (None, "S02", "S03", "S04", "S10", "X01") and not zero else ""
    imports = "import numpy as np\nimport numpy.typing as npt" if batch else "import numpy as np"
    return ScriptCall(what=what, imports=imports, code=code + "\n" + _SORT_FILTER_DRAW, batch=batch)


SCRIPT_CALLS = {
    descriptor().name: _script_call(None),
    "numpy.sort_filter.batch_slot": _script_call(None),
    "numpy.sort_filter.zero": _script_call(None, zero=True),
    "numpy.sort_filter.zero:nan_largest": _script_call("nan_largest", zero=True),
    "numpy.sort_filter.zero:nan_filtered": _script_call("nan_filtered", zero=True),
    **{descriptor(planted=p).name: _script_call(p) for p in PLANTED},
    "numpy.multinomial.generator": ScriptCall(
        what="samplecheck_subject.numpy_samplers' generator_sampler (inverse CDF; _invert's source inlined)",
        imports="import numpy as np",
        code=inspect.getsource(_invert) + "\n" + _GENERATOR_DRAW,
    ),
}
