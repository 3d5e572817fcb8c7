"""FlashInfer 0.7.2.post1's cake sampler, `flashinfer.cake_sampling.top_k_top_p_sampling_from_probs`,
as subjects, called as its docstring documents it (signatures and statements read from the
flashinfer-python 0.7.2.post1 wheel, cited in docs/shipped/flashinfer-cake.md, "FlashInfer's
cake sampler"; no FlashInfer code here).

    samplecheck qualify --exec "python -m samplecheck_subject.run \\
        samplecheck_subject.adapters.flashinfer_cake:subjects"

What cake states (flashinfer/cake_sampling.py's module docstring) and what the descriptors
declare from it:
 - routes: `cake_sampling_route(probs, top_k, top_k_max)` returns "pipeline" when the frozen
   kernels serve the request, else "fallback:<reason>" (device, dtype, layout, arch,
   no_top_k, top_k_disabled, top_k_gt_slab, vocab_too_large), and the call dispatches every
   fallback to flashinfer.sampling.top_k_top_p_sampling_from_probs (filter_apply_order
   "top_k_first", deterministic=True). Every route is in the descriptor's table; each call's
   route is asked of cake_sampling_route with the very tensors and top_k_max the call gets,
   and every output row of that call reports it (out_route).
 - tie_policy "lowest_index" on "pipeline" ("the support is exactly the first k entries of
   lexsort(-prob, index)"); "keep_ties" on every fallback route (the older sampler's
   top_k_renorm_probs keeps every probability >= the k-th: flashinfer_samplers.py).
 - degenerate_rows "treat_as_zero" ("NaN, negative and -0.0 probabilities are treated as +0
   and never sampled"; "+inf" rows draw uniformly among their +inf entries). cake has no
   valid flag: "a row whose top-k mass is zero returns its smallest slab index". The
   adapter reports valid = 0 for a row with no positive entry (the protocol's reading of
   such a row under treat_as_zero), from the input alone, and cake's token for every other.
 - rng_policy "subject_generator": cake takes one Philox (seed, offset) per call
   (philox_seed / philox_offset, or a torch.Generator) and draws row r from
   curand_init(seed, r, offset); the adapter passes philox_seed / philox_offset hashed from
   the call's seeds, subsequences, offsets and row map, a distinct pair per chunk of rows,
   so the same call gives the same tokens. philox_outputs_per_call 32: the "32 reserved
   draws per row" of _philox_params.
 - filter_order "top_k_first" ("Semantics follow flashinfer.sampling's
   top_k_top_p_sampling_from_probs with filter_apply_order='top_k_first'"); top-p is taken
   of top-k's mass and the row is renormalised (probs_normalisation "renormalise").

Two subjects: the float32 one (the pipeline where a row sets 1 <= k <= 1024 below the
vocabulary, a fallback otherwise), and the 16-bit one (bf16 / f16 rows: every call takes
"fallback:dtype"; its tie_policy is the fallback's rule and its degenerate rows are not
judged, since cake's NaN statement is the frozen kernels' and the fallback states none).
The hello records flashinfer-python's version and the sha256 of every file the calls ran,
each checked against the wheel's RECORD (shipped.installed).
"""

from __future__ import annotations

import hashlib
import inspect
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from .. import shipped
from ..batch import SampleBatch, SubjectError
from ..descriptor import DegenerateRows, Dtype, MemorySpace, Route, SamplerDescriptor, TiePolicy
from ..protocol import SC_ERR_INTERNAL
from ..script_call import ScriptCall
from ..serve import SamplerPair as Pair
from . import common

MODULE = "flashinfer.cake_sampling"
DISTRIBUTION = "flashinfer-python"
VERSION = "FlashInfer 0.7.2.post1"
PIPELINE = "pipeline"
# Every fallback reason cake_sampling_route returns (flashinfer/cake_sampling.py:1481-1513), in
# this order, as "fallback:<reason>".
Fallback = Literal[
    "dtype", "layout", "arch", "device", "no_top_k", "top_k_disabled", "top_k_gt_slab", "vocab_too_large"
]
FALLBACKS: tuple[str, ...] = get_args(Fallback)
ROUTES = (Route(PIPELINE, "lowest_index"), *(Route(f"fallback:{r}", "keep_ties") for r in FALLBACKS))
ROUTE_INDEX = {r.name: i for i, r in enumerate(ROUTES)}
# Output rows per call: chunks of at most 64 M probabilities (256 MiB in float32).
CHUNK_ELEMENTS = 1 << 26
# The files the calls run, as the wheel's RECORD spells them: the two modules, the fallback's
# module and its CUDA sources, and the frozen source cake's JIT compiles (manifest order).
CAKE_CSRC = "flashinfer/data/csrc/cake_sampling"
RAN_FILES = (
    "flashinfer/cake_sampling.py",
    "flashinfer/jit/cake_sampling.py",
    "flashinfer/sampling.py",
    "flashinfer/data/csrc/sampling.cu",
    "flashinfer/data/csrc/renorm.cu",
    "flashinfer/data/csrc/flashinfer_sampling_binding.cu",
    f"{CAKE_CSRC}/cake_sampling_binding.cuh",
    f"{CAKE_CSRC}/generated/manifest.json",
    f"{CAKE_CSRC}/generated/cake_sampling_kernels.cu",
    *(f"{CAKE_CSRC}/generated/cake_sampling_kernels_part{i}.cuh" for i in range(1, 14)),
)


def route_index(name: str) -> int:
    """The index of `name` in ROUTES; a route this table does not hold is the adapter's error."""
    index = ROUTE_INDEX.get(name)
    if index is None:
        raise SubjectError(
            SC_ERR_INTERNAL,
            f"cake_sampling_route returned {name!r}, a route the adapter's "
            f"table does not hold ({', '.join(ROUTE_INDEX)})",
        )
    return index


def chunk_seed(call_seed: int, chunk: int) -> int:
    """The 63-bit philox_seed of one chunk of a call: distinct chunks draw distinct streams."""
    h = hashlib.blake2b(digest_size=8)
    h.update(call_seed.to_bytes(8, "little") + chunk.to_bytes(8, "little"))
    return int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)


def chunks(rows: int, vocab_size: int) -> list[tuple[int, int]]:
    step = max(1, CHUNK_ELEMENTS // vocab_size)
    return [(s, min(rows, s + step)) for s in range(0, rows, step)]


def sample_rows(
    cake: Any, table: Any, source: Any, top_k: Any, top_p: Any, call_seed: int, cat: Callable[[Sequence[Any]], Any]
) -> tuple[Any, Any, list[int]]:
    """Draws one token per output row: `table` holds the input rows, `source` the input row of
    each output row, `top_k` (k per input row, vocab_size where off) and `top_p` (1 where off)
    per input row. Each chunk of output rows is one cake call; its route is what
    cake.cake_sampling_route says of the same tensors. Returns (tokens, valid, routes): routes
    one index into ROUTES per output row. Arrays are torch tensors on the device (or, in the
    tests, numpy arrays and a stand-in module); `cat` joins the chunks."""
    tokens: list[Any] = []
    valid: list[Any] = []
    routes: list[int] = []
    vocab_size = int(table.shape[1])
    for c, (s, e) in enumerate(chunks(int(source.shape[0]), vocab_size)):
        rows = source[s:e]
        probs, k, p = table[rows], top_k[rows], top_p[rows]
        kmax = int(k.max())
        route = route_index(cake.cake_sampling_route(probs, k, kmax))
        tokens.append(
            cake.top_k_top_p_sampling_from_probs(
                probs, k, p, top_k_max=kmax, philox_seed=chunk_seed(call_seed, c), philox_offset=0
            )
        )
        # valid 0 only for a row with no positive entry (NaN, negative, -0.0 and 0 count as 0; +inf is positive).
        valid.append((probs > 0).any(1))
        routes += [route] * (e - s)
    return cat(tokens), cat(valid), routes


def _cake() -> Any:
    import flashinfer.cake_sampling as cake

    return cake


def draw(b: SampleBatch) -> Any:
    """One call of the batch: cake on the device, its rows expanded to one per output."""
    import torch

    source = torch.arange(b.num_output_rows, device="cuda") if b.row_index is None else b.row_index.long()
    tokens, valid, routes = sample_rows(
        _cake(),
        b.input,
        source,
        common.top_k_tensor(b),
        common.float_tensor(b, "top_p", 1.0),
        common.generator_seed(b),
        torch.cat,
    )
    return tokens, valid, np.asarray(routes, dtype=np.uint8)


def descriptor(
    name: str,
    dtypes: tuple[Dtype, ...],
    tie_policy: TiePolicy,
    degenerate: DegenerateRows,
    memory: MemorySpace,
    what: str,
) -> SamplerDescriptor:
    return SamplerDescriptor(
        name=name,
        description=f"{VERSION}: {MODULE}.top_k_top_p_sampling_from_probs, {what}",
        memory_space=memory,
        input_kind="probs",
        input_dtypes=dtypes,
        filters=("top_k", "top_p"),
        filter_order="top_k_first",
        tie_policy=tie_policy,
        philox_outputs_per_call=32,
        rng_policy="subject_generator",
        parameter_indexing="input_row",
        degenerate_rows=degenerate,
        probs_normalisation="renormalise",
        routes=ROUTES,
    )


def descriptors(memory: MemorySpace = "cuda") -> list[Pair]:
    return [
        (
            draw,
            descriptor(
                "flashinfer.cake.top_k_top_p_sampling_from_probs",
                ("f32",),
                "lowest_index",
                "treat_as_zero",
                memory,
                "float32 rows (the pipeline where 1 <= k <= 1024 < V)",
            ),
        ),
        (
            draw,
            descriptor(
                "flashinfer.cake.top_k_top_p_sampling_from_probs.16bit",
                ("bf16", "f16"),
                "keep_ties",
                "undefined",
                memory,
                "bf16 / f16 rows (fallback:dtype)",
            ),
        ),
    ]


DESCRIPTORS = {d.name: (fn, d) for fn, d in descriptors()}


# Standalone reproduction scripts (samplecheck_subject.repro_script): cake called as `draw`
# calls it, on the record's row in the dtype it was sent in (DTYPE): the row repeated once
# per draw, one cake call per chunk of rows, that chunk's philox_seed chunk_seed(seed, c). The
# batch call (repro_batch) seeds its calls as `draw` does a batch of requests (call_seed).
_SCRIPT_IMPORTS = """import torch
import flashinfer.cake_sampling as cake  # FlashInfer's module, unmodified"""

_SCRIPT_DRAW = """
CHUNK_ELEMENTS = {chunk}  # probabilities per cake call, as the adapter chunks its rows


{chunk_seed}

def cake_calls(row, params, n, seed, device):
    \"\"\"n copies of the row, one cake call per chunk of them: a token each.\"\"\"
    dtype = {{"bf16": torch.bfloat16, "f16": torch.float16}}.get(DTYPE, torch.float32)
    probs = torch.from_numpy(row).to(device or "cuda", dtype)  # exact: the row was sent so
    vocab = row.size
    k = int(params["top_k"])
    k = vocab if k <= 0 or k >= vocab else k  # the ABI's 0 / >= V: off, as V
    step = max(1, CHUNK_ELEMENTS // vocab)
    tokens = []
    for c, start in enumerate(range(0, n, step)):
        m = min(n, start + step) - start
        batch = probs.expand(m, -1).contiguous()  # one row per draw
        ks = torch.full((m,), k, dtype=torch.int32, device=probs.device)
        ps = torch.full((m,), float(params["top_p"]), dtype=torch.float32, device=probs.device)
        if c == 0:
            print(f"cake_sampling_route: {{cake.cake_sampling_route(batch, ks, k)}}")
        tokens.append(
            cake.top_k_top_p_sampling_from_probs(
                batch, ks, ps, top_k_max=k, philox_seed=chunk_seed(seed, c), philox_offset=0
            )
        )
    return torch.cat(tokens).cpu().numpy()


def draw(row, params, n, seed, device):
    return cake_calls(row, params, n, seed, device)
"""

_SCRIPT_BATCH = """
{call_seed}

def draw_requests(row, params, requests, device):
    seed, subsequence, offset = (np.array(words, dtype=np.uint64) for words in zip(*requests))
    return cake_calls(row, params, len(requests), call_seed(seed, subsequence, offset, None), device)
"""


def _script_call(name: str) -> ScriptCall:
    return ScriptCall(
        what=f"{MODULE}.top_k_top_p_sampling_from_probs ({name}), as adapters.flashinfer_cake calls it",
        imports=_SCRIPT_IMPORTS,
        code=_SCRIPT_DRAW.format(chunk=CHUNK_ELEMENTS, chunk_seed=inspect.getsource(chunk_seed)),
        packages=(f"{DISTRIBUTION} wheel", "torch", "numpy"),
        run="PYTHONPATH=carry/flashinfer CUDA_HOME=/usr/local/cuda python3 {script}  "
        "(FlashInfer's trimmed tree, tools/scripts/trim_flashinfer.sh, or flashinfer-python installed; a GPU)",
        stdlib=("hashlib",),
        batch=_SCRIPT_BATCH.format(call_seed=inspect.getsource(common.call_seed)),
    )


SCRIPT_CALLS = {name: _script_call(name) for name in DESCRIPTORS}


def ran_files() -> tuple[str, ...]:
    """RAN_FILES and every other flashinfer module this process imported, as RECORD paths
    (the trimmed tree's one-line package __init__ is samplecheck's, not the wheel's: left out)."""
    files = list(RAN_FILES)
    for name, module in sorted(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name.split(".")[0] != "flashinfer" or file is None or name == "flashinfer":
            continue
        parts = Path(file).resolve().parts
        relpath = "/".join(parts[len(parts) - 1 - parts[::-1].index("flashinfer") :])
        if relpath not in files:
            files.append(relpath)
    return tuple(files)


def record() -> None:
    """The hello's record: flashinfer-python's version, the sha256 of each of RAN_FILES, and one
    sha256 over the other flashinfer modules that ran (the hello holds at most 48 entries);
    every file checked against the wheel's RECORD."""
    entries = shipped.installed(DISTRIBUTION, RAN_FILES)
    listed = {str(f) for f in metadata.distribution(DISTRIBUTION).files or ()}
    others = [f for f in ran_files() if f not in RAN_FILES and f in listed]
    digest = hashlib.sha256()
    for name, value in sorted(shipped.installed(DISTRIBUTION, tuple(others)).items()):
        if name.startswith(f"{DISTRIBUTION} upstream "):
            digest.update(f"{name}={value}\n".encode())
    entries[f"{DISTRIBUTION} upstream modules"] = f"{len(others)} more files, sha256:{digest.hexdigest()}"
    unlisted = [f for f in ran_files() if f not in listed]
    if unlisted:  # e.g. a JIT-generated module: named, not hashed
        entries[f"{DISTRIBUTION} not in RECORD"] = ", ".join(unlisted)[:128]
    shipped.record_entries(entries)


def _first_calls() -> list[Callable[[], Any]]:
    """The JIT builds (cake's frozen module, the fallback's sampling module) and first launches."""
    import torch

    cake = _cake()
    probs = torch.softmax(torch.randn(2, 4096, device="cuda"), dim=-1)
    k = torch.tensor([5, 50], dtype=torch.int32, device="cuda")
    p = torch.tensor([0.9, 1.0], device="cuda")
    return [
        lambda: cake.top_k_top_p_sampling_from_probs(probs, k, p, top_k_max=50, philox_seed=1, philox_offset=0),
        lambda: cake.top_k_top_p_sampling_from_probs(
            probs.bfloat16(), k, p, top_k_max=50, philox_seed=1, philox_offset=0
        ),
    ]


def subjects() -> tuple[list[Pair], str | None]:
    """On CUDA with flashinfer.cake_sampling importable: both subjects, warmed and recorded;
    elsewhere the hello says why (declared host, as vllm_shipped.cuda_subjects does, since a
    samplecheck built without CUDA refuses a cuda subject before it reads the skip)."""
    reason = common.cuda_unavailable(MODULE)
    if reason is not None:
        return descriptors("host"), reason
    common.warm_up(_first_calls())
    record()
    return descriptors(), None
