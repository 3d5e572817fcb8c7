"""SGLang 0.5.10.post1's own sampling functions and batch-invariant matmul, imported
unmodified from the tree tools/scripts/extract_shipped.py extracts from its wheel
(tools/scripts/shipped/sglang.toml; docs/shipped/sglang.md), served as samplecheck subjects:

    samplecheck qualify --exec "python -m samplecheck_subject.run \\
        samplecheck_subject.adapters.sglang_shipped:subjects"

The tree: $SAMPLECHECK_SGLANG_TREE, default build/shipped/sglang. The device: "cuda" where
torch sees one, else the CPU ($SAMPLECHECK_SGLANG_DEVICE overrides). The hello carries the
wheel's sha256 and each upstream file that ran (samplecheck_subject.shipped).

Each function is called as SGLang's Sampler calls it: one row per request (an output row
here), its parameters per row. The unseeded path draws with torch.multinomial from the
device's default generator, as SGLang does; the adapter seeds that generator from the call
(rng_policy subject_generator: same call, same tokens). The seeded path
(sampling_seed, positions: multinomial_with_seed, murmur_hash32) keys its noise by the
request's seed and position: the request's (seed, subsequence, offset >> 32) hashed to one
63-bit sampling_seed and offset mod 2^32 as the position (the kernel reads the position as
uint32), under rng_policy per_request. That path is a Triton kernel: on the CPU only
through Triton's interpreter (TRITON_INTERPRET=1, with TORCHDYNAMO_DISABLE=1, since
multinomial_with_seed is torch.compile'd and dynamo cannot trace the interpreter).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import shipped
from ..batch import MatmulProblem, SampleBatch, SubjectError
from ..descriptor import MatmulDescriptor, MemorySpace, SamplerDescriptor
from ..protocol import SC_ERR_INVALID_ARGUMENT
from ..script_call import ScriptCall
from ..serve import Pair, Roster

TREE_VARIABLE, TREE_DEFAULT = "SAMPLECHECK_SGLANG_TREE", "build/shipped/sglang"
SAMPLER, HASH = "sglang.srt.layers.sampler", "sglang.srt.layers.utils.hash"
MATMUL = "sglang.srt.batch_invariant_ops.batch_invariant_ops"
TOP_K_ALL = 1 << 30  # sglang.srt.sampling.sampling_params.TOP_K_ALL: top-k off
# Output rows per call of a function: a chunk's sort and its temporaries stay near 1 GiB.
CHUNK_ELEMENTS = 1 << 26


def device() -> str:
    import torch

    return os.environ.get("SAMPLECHECK_SGLANG_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")


def _torch(x: Any, dev: str, dtype: Any = None) -> Any:
    """A batch array (numpy on the host, already torch on "cuda" subjects) as a torch tensor."""
    import torch

    if x is None:
        return None
    t = (
        x
        if isinstance(x, torch.Tensor)
        else torch.from_numpy(np.ascontiguousarray(x).view(np.int64 if x.dtype == np.uint64 else x.dtype))
    )
    return t.to(dev) if dtype is None else t.to(dev, dtype)


def _host(b: SampleBatch, name: str) -> Any:
    return b.host[name] if hasattr(b, "host") else getattr(b, name)


def call_seed(b: SampleBatch) -> int:
    """A 63-bit seed from the call's seeds, subsequences, offsets and row map."""
    h = hashlib.blake2b(digest_size=8)
    for name in ("seed", "subsequence", "offset", "row_index"):
        a = _host(b, name)
        h.update(name.encode())
        h.update(b"-" if a is None else np.ascontiguousarray(a).tobytes())
    return int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)


def request_keys(b: SampleBatch) -> tuple[np.ndarray, np.ndarray]:
    """(sampling_seed, position) per output row for the seeded path: the request's seed,
    subsequence and offset's high word hashed to 63 bits; the offset's low word."""
    seed, subsequence, offset = (np.asarray(_host(b, n), dtype=np.uint64) for n in ("seed", "subsequence", "offset"))
    keys = np.empty(seed.size, dtype=np.int64)
    for r in range(seed.size):
        h = hashlib.blake2b(digest_size=8)
        h.update(np.array([seed[r], subsequence[r], offset[r] >> np.uint64(32)], dtype=np.uint64).tobytes())
        keys[r] = int.from_bytes(h.digest(), "little") & ((1 << 63) - 1)
    return keys, (offset & np.uint64(0xFFFFFFFF)).astype(np.int64)


def refuse_degenerate(probs: Any) -> None:
    """torch.multinomial refuses NaN / Inf / negative / all-zero rows (a RuntimeError on the
    CPU, a device-side assert on CUDA that poisons the context): refuse them before the
    call, as the declared degenerate_rows "error"."""
    import torch

    bad = ~torch.isfinite(probs).all(dim=1) | (probs < 0).any(dim=1) | (probs.sum(dim=1) <= 0)
    if bool(bad.any()):
        row = int(torch.nonzero(bad)[0])
        raise SubjectError(SC_ERR_INVALID_ARGUMENT, f"input row {row} is NaN, Inf, negative or all zero")


class Request:
    """One call's tensors, one row per output (as SGLang's batches are laid out)."""

    b: SampleBatch
    dev: str
    n: int
    v: int
    probs: Any  # float32 [n, v] on dev
    source: Any  # the input row of each output row, int64 on dev

    def __init__(self, b: SampleBatch, dev: str) -> None:
        import torch

        self.b, self.dev = b, dev
        self.n, self.v = b.num_output_rows, b.vocab_size
        self.probs = _torch(b.input, dev, torch.float32)
        refuse_degenerate(self.probs)
        self.source = torch.arange(self.n, device=dev) if b.row_index is None else _torch(b.row_index, dev).long()

    def per_output(self, name: str, off: float, dtype: Any) -> Any:
        import torch

        values = getattr(self.b, name)
        if values is None:
            return torch.full((self.n,), off, dtype=dtype, device=self.dev)
        return _torch(values, self.dev, dtype).index_select(0, self.source)

    def chunks(self) -> list[tuple[int, int]]:
        step = max(1, CHUNK_ELEMENTS // self.v)
        return [(s, min(self.n, s + step)) for s in range(0, self.n, step)]

    def rows(self, start: int, end: int) -> Any:
        return self.probs.index_select(0, self.source[start:end])


def _seed_default_generator(b: SampleBatch, dev: str) -> None:
    """SGLang draws from the device's default generator; seeding it from the call makes the
    call replayable (the subject_generator contract)."""
    import torch

    seed = call_seed(b)
    if dev == "cuda":
        torch.cuda.manual_seed(seed)
    else:
        torch.manual_seed(seed)


def sampling_from_probs(seeded: bool) -> Callable[[Any], Any]:
    def fn(b: SampleBatch) -> Any:
        import torch

        sampler = _modules()[SAMPLER]
        r = Request(b, device())
        keys, positions = _keys(b, r.dev) if seeded else (None, None)
        if not seeded:
            _seed_default_generator(b, r.dev)
        tokens = [
            sampler.sampling_from_probs_torch(
                r.rows(s, e), None if keys is None else keys[s:e], None if positions is None else positions[s:e]
            )
            for s, e in r.chunks()
        ]
        return torch.cat(tokens), None

    return fn


def top_k_top_p_min_p(seeded: bool) -> Callable[[Any], Any]:
    def fn(b: SampleBatch) -> Any:
        import torch

        sampler = _modules()[SAMPLER]
        r = Request(b, device())
        k = r.per_output("top_k", TOP_K_ALL, torch.int32)  # SGLang's top_ks are int32
        k = torch.where((k <= 0) | (k >= r.v), torch.full_like(k, TOP_K_ALL), k)  # the ABI's 0 / >= V: off
        p = r.per_output("top_p", 1.0, torch.float32)
        min_p = r.per_output("min_p", 0.0, torch.float32)
        # SGLang's SamplingBatchInfo: need_min_p_sampling = any request's min_p > 0.
        need_min_p = bool((min_p > 0).any())
        keys, positions = _keys(b, r.dev) if seeded else (None, None)
        if not seeded:
            _seed_default_generator(b, r.dev)
        tokens = [
            sampler.top_k_top_p_min_p_sampling_from_probs_torch(
                r.rows(s, e),
                k[s:e],
                p[s:e],
                min_p[s:e],
                need_min_p,
                None if keys is None else keys[s:e],
                None if positions is None else positions[s:e],
            )
            for s, e in r.chunks()
        ]
        return torch.cat(tokens), None

    return fn


def _keys(b: SampleBatch, dev: str) -> tuple[Any, Any]:
    import torch

    keys, positions = request_keys(b)
    return torch.from_numpy(keys).to(dev), torch.from_numpy(positions).to(dev)


def matmul(name: str) -> Callable[[Any], Any]:
    """out = a @ weight.T (+ bias) in bf16 through batch_invariant_ops: matmul_persistent
    (bias as its argument), mm_batch_invariant (bias added after, as torch.mm's caller
    would), addmm_batch_invariant (bias as addmm's input)."""

    def fn(p: MatmulProblem) -> Any:

        ops = _modules()[MATMUL]
        dev = device()
        a, w, bias = (_bf16(_torch(x, dev)) for x in (p.a, p.weight, p.bias))
        if name == "matmul_persistent":
            return ops.matmul_persistent(a, w.t(), bias)
        if name == "mm_batch_invariant":
            out = ops.mm_batch_invariant(a, w.t())
            return out if bias is None else out + bias
        if bias is None:
            return ops.mm_batch_invariant(a, w.t())
        return ops.addmm_batch_invariant(bias, a, w.t())

    return fn


def _bf16(x: Any) -> Any:
    """bf16 bits from the shared region (uint16 on the host) as bf16; the device path's
    operands arrive as bf16 already."""
    import torch

    return x.view(torch.bfloat16) if x is not None and x.dtype in (torch.int16, torch.uint16) else x


_loaded: dict[str, Any] = {}


def _modules() -> dict[str, Any]:
    """The shipped modules, imported once from the extracted tree (checked and recorded)."""
    if not _loaded:
        tree = shipped.tree_from_env(TREE_VARIABLE, TREE_DEFAULT)
        names = [SAMPLER, HASH, MATMUL]
        _loaded.update(zip(names, shipped.load(tree, names)))
    return _loaded


def _sampler(name: str, fn: Callable[[SampleBatch], Any], memory: MemorySpace, **kw: Any) -> Pair:
    base: dict[str, Any] = {
        "input_kind": "probs",
        "input_dtypes": ("f32",),
        "philox_outputs_per_call": 1,
        "degenerate_rows": "error",
        "memory_space": memory,
    }
    base.update(kw)
    return fn, SamplerDescriptor(name=name, **base)


def descriptors(memory: MemorySpace, seeded: bool, matmuls: bool) -> list[Pair]:
    version = "SGLang 0.5.10.post1, shipped"
    filtered = {"filter_order": "joint", "tie_policy": "lowest_index"}
    pairs = [
        _sampler(
            "sglang.sampling_from_probs_torch",
            sampling_from_probs(False),
            memory,
            filters=(),
            rng_policy="subject_generator",
            description=f"{version}: sampling_from_probs_torch(probs) (torch.multinomial)",
        ),
        _sampler(
            "sglang.top_k_top_p_min_p_sampling_from_probs_torch",
            top_k_top_p_min_p(False),
            memory,
            rng_policy="subject_generator",
            filters=("top_k", "top_p", "min_p"),
            **filtered,
            description=f"{version}: top_k_top_p_min_p_sampling_from_probs_torch (torch.multinomial)",
        ),
    ]
    if seeded:
        pairs += [
            _sampler(
                "sglang.sampling_from_probs_torch.seeded",
                sampling_from_probs(True),
                memory,
                filters=(),
                rng_policy="per_request",
                description=f"{version}: sampling_from_probs_torch(probs, sampling_seed, positions) "
                "(multinomial_with_seed, murmur_hash32)",
            ),
            # With a sampling_seed, SGLang asserts that no request sets min_p: it is not declared.
            _sampler(
                "sglang.top_k_top_p_sampling_from_probs_torch.seeded",
                top_k_top_p_min_p(True),
                memory,
                rng_policy="per_request",
                filters=("top_k", "top_p"),
                **filtered,
                description=f"{version}: top_k_top_p_min_p_sampling_from_probs_torch with sampling_seed, "
                "positions (multinomial_with_seed)",
            ),
        ]
    if matmuls:
        pairs += [
            (
                matmul(n),
                MatmulDescriptor(
                    name=f"sglang.{n}",
                    memory_space=memory,
                    description=f"{version}: batch_invariant_ops.{n} in bf16 (Triton)",
                ),
            )
            for n in ("matmul_persistent", "mm_batch_invariant", "addmm_batch_invariant")
        ]
    return pairs


def subjects() -> Roster:
    """Every subject this machine can run, or the reason none can (no torch, no tree, a
    failed import). The Triton subjects need a GPU: on the CPU the seeded pair runs only in
    Triton's interpreter (TRITON_INTERPRET=1), the matmuls not at all (their kernels in the
    interpreter would take hours a check)."""
    try:
        import torch
    except ImportError as e:
        return descriptors("host", True, True), f"torch is not installed ({e})"
    cuda = device() == "cuda"
    pairs = descriptors("cuda" if cuda else "host", cuda or os.environ.get("TRITON_INTERPRET") == "1", cuda)
    try:
        _modules()
    except (shipped.ShippedError, ImportError) as e:
        return pairs, f"SGLang's extracted modules do not load ({TREE_VARIABLE}): {type(e).__name__}: {e}"
    if cuda:
        torch.zeros(1, device="cuda")
    return pairs, None


# Every subject as a CUDA machine serves it, by name (tools/scripts/h200_qualify_python.sh).
DESCRIPTORS = {d.name: (fn, d) for fn, d in descriptors("cuda", True, True)}


# Standalone reproduction scripts (samplecheck_subject.repro_script): each function as the
# adapter calls it, one row per request, chunked. The unseeded pair draws from the default
# generator, seeded from the script's seed; the seeded pair gets each draw's request keys as
# request_keys forms them from the check's (seed, subsequence, offset), so its draws are the
# check's draws of the row.
_SCRIPT_IMPORTS = """import torch
from sglang.srt.layers import sampler  # SGLang's module, unmodified"""

_SCRIPT_CONSTANTS = """
TOP_K_ALL = 1 << 30  # sglang.srt.sampling.sampling_params.TOP_K_ALL: top-k off
CHUNK_ELEMENTS = 1 << 26  # requests per call: a chunk's sort and temporaries near 1 GiB
"""

# The chunk loop both script kinds share: SEED_LINE picks the draws' randomness, PREPARE_LINE
# (the seeded kind's request keys; the unseeded kind has none) readies each chunk for CALL.
_CHUNKED_DRAW = """

def draw(row, params, n, seed, device):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    SEED_LINE
    probs = torch.from_numpy(row).to(device)
    step = max(1, CHUNK_ELEMENTS // row.size)
    tokens = []
    for start in range(0, n, step):
        m = min(n, start + step) - start
        batch = probs.expand(m, -1).contiguous()  # one row per request, as SGLang's Sampler has them
        PREPARE_LINE
        tokens.append(CALL)
    return torch.cat(tokens).cpu().numpy()
"""


def _chunked_draw(seed_line: str, prepare_line: str = "") -> str:
    """The chunk loop with its seed line and its per-chunk line (none when empty)."""
    prepare = f"        {prepare_line}\n" if prepare_line else ""
    return _CHUNKED_DRAW.replace("SEED_LINE", seed_line).replace("        PREPARE_LINE\n", prepare)


_SCRIPT_DRAW = _SCRIPT_CONSTANTS + _chunked_draw(
    "torch.manual_seed(seed)  # SGLang draws from the device's default generator"
)

_FILTERED_CALL = """sampler.top_k_top_p_min_p_sampling_from_probs_torch(
            batch, torch.full((m,), top_k(params, row.size), dtype=torch.int32, device=device),
            torch.full((m,), float(params["top_p"]), dtype=torch.float32, device=device),
            torch.full((m,), float(params["min_p"]), dtype=torch.float32, device=device),
            float(params["min_p"]) > 0, None, None)"""

_TOP_K = """

def top_k(params, vocab):
    k = int(params["top_k"])
    return TOP_K_ALL if k <= 0 or k >= vocab else k  # the ABI's 0 / >= V: off
"""


_SEEDED_DRAW = (
    _SCRIPT_CONSTANTS
    + """

def request_keys(seed, start, end, device):
    \"\"\"(sampling_seed, positions) of draws start..end as the adapter's request_keys forms them:
    draw i is the check's request (seed, FIRST_SUBSEQUENCE + i, offset 0), its three words
    hashed by blake2b to 63 bits; the position is the offset's low word.\"\"\"
    keys = []
    for i in range(start, end):
        words = struct.pack("<3Q", seed, FIRST_SUBSEQUENCE + i, 0)
        keys.append(int.from_bytes(hashlib.blake2b(words, digest_size=8).digest(), "little") & ((1 << 63) - 1))
    positions = torch.zeros(end - start, dtype=torch.int64, device=device)
    return torch.tensor(keys, dtype=torch.int64, device=device), positions
"""
    + _chunked_draw(
        "seed = STREAM_SEED if seed == SEED else seed  # the check's requests unless --seed names others",
        "keys, positions = request_keys(seed, start, start + m, device)",
    )
)

_SEEDED_FILTERED_CALL = _FILTERED_CALL.replace("None, None)", "keys, positions)")


def _script_call(function: str, call: str, extra: str = "", seeded: bool = False) -> ScriptCall:
    on_cpu = "; on the CPU with TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1" if seeded else ""
    return ScriptCall(
        what=f"sglang.srt.layers.sampler.{function}{' with sampling_seed, positions' if seeded else ''}, "
        "as samplecheck_subject.adapters.sglang_shipped calls it",
        imports=_SCRIPT_IMPORTS,
        code=(_SEEDED_DRAW if seeded else _SCRIPT_DRAW).replace("CALL", call) + extra,
        packages=("sglang wheel", "torch", "numpy"),
        run="PYTHONPATH=build/shipped/sglang/site python3 {script} [--device cpu|cuda]  "
        f"(with SGLang installed in full, no PYTHONPATH{on_cpu})",
        stdlib=("hashlib", "struct") if seeded else (),
        keyed=seeded,
    )


SCRIPT_CALLS = {
    "sglang.sampling_from_probs_torch": _script_call(
        "sampling_from_probs_torch", "sampler.sampling_from_probs_torch(batch)"
    ),
    "sglang.top_k_top_p_min_p_sampling_from_probs_torch": _script_call(
        "top_k_top_p_min_p_sampling_from_probs_torch", _FILTERED_CALL, _TOP_K
    ),
    "sglang.sampling_from_probs_torch.seeded": _script_call(
        "sampling_from_probs_torch", "sampler.sampling_from_probs_torch(batch, keys, positions)", seeded=True
    ),
    "sglang.top_k_top_p_sampling_from_probs_torch.seeded": _script_call(
        "top_k_top_p_min_p_sampling_from_probs_torch", _SEEDED_FILTERED_CALL, _TOP_K, seeded=True
    ),
}
