"""vLLM 0.33.0's own sampling code and batch-invariant matmul, imported unmodified from the
tree tools/scripts/extract_shipped.py extracts from its wheel (tools/scripts/shipped/vllm.toml;
docs/shipped/vllm.md), served as samplecheck subjects:

    samplecheck qualify --exec "python -m samplecheck_subject.run \\
        samplecheck_subject.adapters.vllm_shipped:subjects"

The tree: $SAMPLECHECK_VLLM_TREE, default build/shipped/vllm. The device: "cuda" where torch
sees one, else the CPU. The hello carries the wheel's sha256 and each file that ran.

Each function is called as vLLM's Sampler calls it: one float32 logits row per request (an
output row here), k / p per row, None where no row sets them (as vLLM's InputBatch passes
them), k = vocab_size for a row without top-k. vLLM keeps one torch.Generator per seeded
request, seeded from the request's seed when it is added and advanced by every step; the
adapter seeds one per output row from the request's (seed, subsequence, offset) hashed to 63
bits (rng_policy per_request). The unseeded subject draws from the device's default
generator, which the adapter seeds from the call (subject_generator). forward_native writes
its logits in place (its docstring: "The logits tensor may be updated in-place"): where the
call's rows are its input rows, vLLM gets samplecheck's array itself (inputs "mutated").

gumbel_sample (the model runner v2's sampler) keys its noise by a hash of (seed, position,
token): rng_policy request_keyed, the request's seed and offset as seed and position; a Triton
kernel, on the CPU only in Triton's interpreter (TRITON_INTERPRET=1, TORCHDYNAMO_DISABLE=1).
The Triton top-k / top-p kernel, forward_cuda's FlashInfer route and the matmuls: cuda_subjects.

Routes (ABI 1.5): forward_native and forward_cuda pick their filter at run time
(forward_cuda: flashinfer_sample where a row sets k or p and no generator is given, else
forward_native; apply_top_k_top_p: the Triton kernel where HAS_TRITON, else the torch sort,
whose top-k-only case is apply_top_k_only where allow_cpu_sync). Their subjects declare the
table ROUTES and report, per output row, the route its call took: the adapter wraps the
functions the sampler module looks up by name (route_spies: each wrapper notes its route and
calls vLLM's own function, unchanged) and reads which ran. Every route is declared
keep_ties, the rule of vLLM's torch code (`logits_sort < top_k_mask`): vLLM states none for
the others, and the ties check names the route of each row it judges.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from .. import shipped
from ..batch import MatmulProblem, SampleBatch
from ..descriptor import MatmulDescriptor, MemorySpace, Route, SamplerDescriptor
from ..serve import Pair, Roster
from . import common, vllm_scripts
from .sglang_shipped import _bf16, _host, _torch, call_seed

TREE_VARIABLE, TREE_DEFAULT = "SAMPLECHECK_VLLM_TREE", "build/shipped/vllm"
SAMPLER = "vllm.v1.sample.ops.topk_topp_sampler"
TRITON = "vllm.v1.sample.ops.topk_topp_triton"
GUMBEL = "vllm.v1.worker.gpu.sample.gumbel"
MATMUL = "vllm.model_executor.determinism.batch_invariant"
VERSION = "vLLM 0.33.0, shipped"
# Output rows per call: a chunk of 16 M logits; its sort, masks and noise stay near 1 GiB.
CHUNK_ELEMENTS = 1 << 24
# The routes a call of forward_native / forward_cuda may take. "unfiltered": no filter ran (no k,
# no p); each other one is a filter function of the sampler module.
VllmRoute = Literal["unfiltered", "flashinfer", "triton", "top_k_only", "pytorch"]
# The filters, most specific first: the route each reports, and the name the sampler module
# calls it by.
ROUTE_FUNCTIONS: tuple[tuple[VllmRoute, str], ...] = (
    ("flashinfer", "flashinfer_sample"),
    ("triton", "apply_top_k_top_p_triton"),
    ("top_k_only", "apply_top_k_only"),
    ("pytorch", "apply_top_k_top_p_pytorch"),
)
ROUTES = (Route("unfiltered", "keep_ties"), *(Route(r, "keep_ties") for r, _ in ROUTE_FUNCTIONS))
_ran: set[VllmRoute] = set()


def route_spies(module: Any) -> None:
    """Wraps each of ROUTE_FUNCTIONS that `module` holds in a function that notes its route in
    _ran and returns what vLLM's own function returns (once: a wrapper is not wrapped again)."""
    for route, name in ROUTE_FUNCTIONS:
        original = getattr(module, name, None)
        if original is None or hasattr(original, "samplecheck_route"):
            continue

        def spy(*args: Any, _original: Any = original, _route: VllmRoute = route, **kwargs: Any) -> Any:
            _ran.add(_route)
            return _original(*args, **kwargs)

        spy.samplecheck_route = route  # type: ignore[attr-defined]
        setattr(module, name, spy)


def taken_route(ran: set[VllmRoute]) -> int:
    """The index in ROUTES of the most specific route that ran (0, "unfiltered", when none did)."""
    for i, (route, _) in enumerate(ROUTE_FUNCTIONS, start=1):
        if route in ran:
            return i
    return 0


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def generator_seeds(b: SampleBatch) -> list[int]:
    """One 63-bit seed per output row from the request's (seed, subsequence, offset)."""
    seed, subsequence, offset = (np.asarray(_host(b, n), dtype=np.uint64) for n in ("seed", "subsequence", "offset"))
    seeds = []
    for r in range(seed.size):
        h = hashlib.blake2b(digest_size=8)
        h.update(np.array([seed[r], subsequence[r], offset[r]], dtype=np.uint64).tobytes())
        seeds.append(int.from_bytes(h.digest(), "little") & ((1 << 63) - 1))
    return seeds


class Call:
    """One call's logits (one row per output), k and p as vLLM's InputBatch passes them."""

    b: SampleBatch
    dev: str
    n: int
    v: int
    source: Any  # the input row of each output row, int64 on dev
    x: Any  # the call's input rows, float32 on dev

    def __init__(self, b: SampleBatch, dev: str) -> None:
        import torch

        self.b, self.dev = b, dev
        self.n, self.v = b.num_output_rows, b.vocab_size
        self.x = _torch(b.input, dev, torch.float32)
        self.source = torch.arange(self.n, device=dev) if b.row_index is None else _torch(b.row_index, dev).long()

    def logits(self, start: int, end: int) -> Any:
        """Output rows start..end as float32 [end - start, v] on dev, gathered per chunk: a call
        of 184k outputs at V = 151,936 gathered at once needs 104 GiB. vLLM's logits rows are
        the requests' own: where the call's rows are its input rows, forward_native gets (and
        may write) samplecheck's array itself."""
        if self.b.row_index is None and self.n == self.x.shape[0]:
            return self.x[start:end]
        return self.x.index_select(0, self.source[start:end])

    def per_output(self, name: str) -> Any:
        values = getattr(self.b, name)
        return None if values is None else _torch(values, self.dev).index_select(0, self.source)

    def k(self) -> Any:
        """int32 k per row, vocab_size where top-k is off (the ABI's 0 / >= V); None when no row sets it."""
        import torch

        k = self.per_output("top_k")
        if k is None:
            return None
        k = torch.where((k <= 0) | (k >= self.v), torch.full_like(k, self.v), k).to(torch.int32)
        return None if bool((k == self.v).all()) else k

    def p(self) -> Any:
        import torch

        p = self.per_output("top_p")
        if p is None:
            return None
        p = p.to(torch.float32)
        return None if bool((p >= 1).all()) else p

    def chunks(self) -> list[tuple[int, int]]:
        step = max(1, CHUNK_ELEMENTS // self.v)
        return [(s, min(self.n, s + step)) for s in range(0, self.n, step)]

    def generators(self, start: int, end: int, seeds: list[int]) -> dict[int, Any]:
        import torch

        return {r - start: torch.Generator(device=self.dev).manual_seed(seeds[r]) for r in range(start, end)}


def _seed_default_generator(b: SampleBatch, dev: str) -> None:
    import torch

    if dev == "cuda":
        torch.cuda.manual_seed(call_seed(b))
    else:
        torch.manual_seed(call_seed(b))


def _sampler_module(fp64_gumbel: bool = False) -> Any:
    """A TopKTopPSampler as vLLM builds it (logprobs_mode raw_logprobs; fp32 noise unless
    fp64_gumbel, vLLM's use_fp64_gumbel), built once per setting; the adapter calls the named
    forward_* method, whichever __init__ picked."""
    modules = _modules()
    key = "sampler.fp64" if fp64_gumbel else "sampler"
    if key not in modules:
        os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")  # __init__'s probe imports the attention backend
        modules[key] = modules[SAMPLER].TopKTopPSampler(logprobs_mode="raw_logprobs", use_fp64_gumbel=fp64_gumbel)
    return modules[key]


def _draw(
    b: SampleBatch, seeded: bool, step: Callable[[Any, Any, Any, dict[int, Any]], Any], routed: bool = False
) -> Any:
    """Calls step(logits, k, p, generators) per chunk of output rows and joins the tokens;
    routed: with, per output row, the index in ROUTES of the route its chunk's call took."""
    import torch

    c = Call(b, device())
    k, p = c.k(), c.p()
    seeds = generator_seeds(b) if seeded else []
    if not seeded:
        _seed_default_generator(b, c.dev)
    tokens, routes = [], []
    for s, e in c.chunks():
        _ran.clear()
        tokens.append(
            step(
                c.logits(s, e),
                None if k is None else k[s:e],
                None if p is None else p[s:e],
                c.generators(s, e, seeds) if seeded else {},
            )
        )
        routes += [taken_route(_ran)] * (e - s)
    if routed:
        return torch.cat(tokens), None, np.asarray(routes, dtype=np.uint8)
    return torch.cat(tokens), None


def forward_native(seeded: bool, fp64_gumbel: bool = False) -> Callable[[Any], Any]:
    def fn(b: SampleBatch) -> Any:
        sampler = _sampler_module(fp64_gumbel)
        return _draw(b, seeded, lambda x, k, p, g: sampler.forward_native(x, g, k, p)[0], routed=True)

    return fn


def forward_cuda(b: SampleBatch) -> Any:
    """forward_cuda as vLLM routes a CUDA batch without per-request generators: FlashInfer's
    sampler where a row sets k or p (flashinfer_sample), forward_native where none does."""
    # flashinfer_sample reads `flashinfer.sampling` as an attribute of the package, which
    # FlashInfer's own __init__ imports; the trimmed tree's __init__ imports nothing.
    import flashinfer.sampling  # noqa: F401

    sampler = _sampler_module()
    return _draw(b, False, lambda x, k, p, g: sampler.forward_cuda(x, g, k, p)[0], routed=True)


def filtered_then_random_sample(route: str) -> Callable[[Any], Any]:
    """One masking route of apply_top_k_top_p, then forward_native's softmax and random_sample
    with per-request generators: "pytorch" (apply_top_k_top_p_pytorch, the sort; top-k alone
    also sorts, allow_cpu_sync False as on a GPU), "top_k_only" (apply_top_k_only, no sort),
    "triton" (apply_top_k_top_p_triton)."""

    def fn(b: SampleBatch) -> Any:
        import torch

        m = _modules()

        def step(x: Any, k: Any, p: Any, g: dict[int, Any]) -> Any:
            if route == "pytorch":
                x = m[SAMPLER].apply_top_k_top_p_pytorch(x, k, p, allow_cpu_sync=False)
            elif route == "top_k_only":
                x = x if k is None else m[SAMPLER].apply_top_k_only(x, k)
            elif k is not None or p is not None:
                x = m[TRITON].apply_top_k_top_p_triton(x, k, p)
            return m[SAMPLER].random_sample(x.softmax(dim=-1, dtype=torch.float32), g)

        return _draw(b, True, step)

    return fn


def gumbel_sample(b: SampleBatch) -> Any:
    """gumbel_sample(logits, idx_mapping, temperature 1, seed, pos): one request state per
    output row, its seed the request's seed (int64 bits), its position the request's offset."""
    import torch

    c = Call(b, device())
    seed = _torch(np.asarray(_host(b, "seed"), dtype=np.uint64), c.dev)  # uint64 bits as int64
    pos = _torch(np.asarray(_host(b, "offset"), dtype=np.uint64), c.dev)
    tokens = []
    for s, e in c.chunks():
        rows = torch.arange(e - s, device=c.dev)
        ones = torch.ones(e - s, dtype=torch.float32, device=c.dev)
        tokens.append(
            _modules()[GUMBEL].gumbel_sample(
                c.logits(s, e), rows, ones, seed[s:e], pos[s:e], apply_temperature=True, is_drafting=False
            )
        )
    return torch.cat(tokens), None


def matmul(name: str) -> Callable[[Any], Any]:
    """out = a @ weight.T (+ bias) in bf16: matmul_persistent(a, w.T, bias),
    mm_batch_invariant(a, w.T, bias), linear_batch_invariant(a, w, bias)."""

    def fn(p: MatmulProblem) -> Any:
        ops = _modules()[MATMUL]
        dev = device()
        a, w, bias = (_bf16(_torch(x, dev)) for x in (p.a, p.weight, p.bias))
        if name == "linear_batch_invariant":
            return ops.linear_batch_invariant(a, w, bias)
        return getattr(ops, name)(a, w.t(), bias)

    return fn


_loaded: dict[str, Any] = {}


def _modules() -> dict[str, Any]:
    """The shipped modules, imported once from the extracted tree (checked and recorded)."""
    if not _loaded:
        tree = shipped.tree_from_env(TREE_VARIABLE, TREE_DEFAULT)
        names = [SAMPLER, TRITON, GUMBEL, MATMUL]
        _loaded.update(zip(names, shipped.load(tree, names)))
        route_spies(_loaded[SAMPLER])
    return _loaded


def _logits(name: str, fn: Callable[[SampleBatch], Any], memory: MemorySpace, description: str, **kw: Any) -> Pair:
    base: dict[str, Any] = {
        "input_kind": "logits",
        "input_dtypes": ("f32",),
        "philox_outputs_per_call": 1,
        "degenerate_rows": "undefined",
        "memory_space": memory,
    }
    base.update(kw)
    return fn, SamplerDescriptor(name=name, description=f"{VERSION}: {description}", **base)


# top-k keeps every logit equal to the k-th largest (logits < the k-th are masked), then top-p
# runs on the softmax of what top-k kept.
_FILTERED: dict[str, Any] = {"filters": ("top_k", "top_p"), "filter_order": "top_k_first", "tie_policy": "keep_ties"}


def torch_descriptors(memory: MemorySpace) -> list[Pair]:
    """forward_native (apply_top_k_top_p's route on this machine) and the two torch routes."""
    return [
        _logits(
            "vllm.forward_native",
            forward_native(True),
            memory,
            "TopKTopPSampler.forward_native, a torch.Generator per request (random_sample)",
            rng_policy="per_request",
            inputs="mutated",
            routes=ROUTES,
            **_FILTERED,
        ),
        _logits(
            "vllm.forward_native.fp64",
            forward_native(True, fp64_gumbel=True),
            memory,
            "TopKTopPSampler(use_fp64_gumbel=True).forward_native: random_sample's exponential noise in float64",
            rng_policy="per_request",
            inputs="mutated",
            routes=ROUTES,
            **_FILTERED,
        ),
        _logits(
            "vllm.forward_native.unseeded",
            forward_native(False),
            memory,
            "TopKTopPSampler.forward_native, no per-request generators (the default generator)",
            rng_policy="subject_generator",
            inputs="mutated",
            routes=ROUTES,
            **_FILTERED,
        ),
        _logits(
            "vllm.apply_top_k_top_p_pytorch+random_sample",
            filtered_then_random_sample("pytorch"),
            memory,
            "apply_top_k_top_p_pytorch (the sort), softmax, random_sample with per-request generators",
            rng_policy="per_request",
            inputs="mutated",
            **_FILTERED,
        ),
        _logits(
            "vllm.apply_top_k_only+random_sample",
            filtered_then_random_sample("top_k_only"),
            memory,
            "apply_top_k_only, softmax, random_sample with per-request generators",
            rng_policy="per_request",
            inputs="mutated",
            filters=("top_k",),
            tie_policy="keep_ties",
        ),
    ]


def triton_descriptors(memory: MemorySpace) -> list[Pair]:
    return [
        _logits(
            "vllm.gumbel_sample",
            gumbel_sample,
            memory,
            "v1/worker/gpu/sample/gumbel.py gumbel_sample (Triton; noise murmur3(seed, pos, token))",
            rng_policy="request_keyed",
        )
    ]


def cuda_descriptors(memory: MemorySpace = "cuda") -> list[Pair]:
    """What runs only on a GPU: the Triton top-k / top-p kernel (its interpreter run fails on
    the CPU, docs/shipped/vllm.md), the FlashInfer route and the batch-invariant matmuls. `memory`
    is "host" only where they are declared to be skipped (a samplecheck built without CUDA
    refuses a cuda subject before it reads the skip)."""
    pairs = [
        _logits(
            "vllm.apply_top_k_top_p_triton+random_sample",
            filtered_then_random_sample("triton"),
            memory,
            "apply_top_k_top_p_triton (Qrita), softmax, random_sample with per-request generators",
            rng_policy="per_request",
            inputs="mutated",
            **_FILTERED,
        ),
        _logits(
            "vllm.forward_cuda.flashinfer",
            forward_cuda,
            memory,
            "TopKTopPSampler.forward_cuda: flashinfer_sample (deterministic=True), the default generator",
            rng_policy="subject_generator",
            inputs="mutated",
            routes=ROUTES,
            **_FILTERED,
        ),
    ]
    pairs += [
        (
            matmul(n),
            MatmulDescriptor(
                name=f"vllm.{n}", memory_space=memory, description=f"{VERSION}: batch_invariant.{n} in bf16 (Triton)"
            ),
        )
        for n in ("matmul_persistent", "mm_batch_invariant", "linear_batch_invariant")
    ]
    return pairs


def _unavailable() -> str | None:
    try:
        _modules()
    except (shipped.ShippedError, ImportError) as e:
        return f"vLLM's extracted modules do not load ({TREE_VARIABLE}): {type(e).__name__}: {e}"
    return None


def subjects() -> Roster:
    """The subjects this machine runs: on CUDA the torch routes and gumbel_sample; on the CPU
    the torch routes, or, under Triton's interpreter (TRITON_INTERPRET=1), gumbel_sample."""
    try:
        import torch
    except ImportError as e:
        return torch_descriptors("host") + triton_descriptors("host"), f"torch is not installed ({e})"
    cuda = torch.cuda.is_available()
    memory = "cuda" if cuda else "host"
    interpret = os.environ.get("TRITON_INTERPRET") == "1"
    pairs = (
        torch_descriptors(memory) + triton_descriptors(memory)
        if cuda
        else (triton_descriptors(memory) if interpret else torch_descriptors(memory))
    )
    return pairs, _unavailable()


def flashinfer_before_the_hello() -> str | None:
    """forward_cuda's FlashInfer route imports flashinfer.sampling at its first call, after the
    hello, so the hello named neither FlashInfer's version nor its modules built ahead of time.
    Imported here, before it, the hello records both (serve.environment). A FlashInfer that
    does not import is left to that first call, which fails the route's checks with the error;
    the other GPU subjects do not need it. Returns the import error's words, else None."""
    try:
        importlib.import_module("flashinfer.sampling")
    except Exception as e:  # noqa: BLE001 - any import failure is the route's, at its call
        return f"flashinfer.sampling does not import: {type(e).__name__}: {e}"
    return None


def cuda_subjects() -> Roster:
    """The GPU-only subjects; on a machine without CUDA the hello says so and samplecheck skips."""
    reason = common.cuda_unavailable()
    if reason is not None:
        return cuda_descriptors("host"), reason
    why = flashinfer_before_the_hello()
    if why is not None:  # in the subject's stderr, which samplecheck shows beside a failed check
        print(f"vllm.forward_cuda.flashinfer will fail: {why}", file=sys.stderr)
    return cuda_descriptors(), _unavailable()


# Every subject as a CUDA machine serves it, by name.
DESCRIPTORS = {d.name: (fn, d) for fn, d in torch_descriptors("cuda") + triton_descriptors("cuda") + cuda_descriptors()}


# Standalone reproduction scripts (samplecheck_subject.repro_script): every sampler subject,
# called as above (adapters/vllm_scripts.py).
SCRIPT_CALLS = vllm_scripts.script_calls(CHUNK_ELEMENTS)
