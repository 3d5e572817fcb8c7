"""Standalone reproduction scripts (samplecheck_subject.repro_script) for vLLM's sampler
subjects: each calls vLLM's own function, imported from the extracted tree as the adapter
loads it ($SAMPLECHECK_VLLM_TREE/site first on sys.path), the way vllm_shipped calls it.

As the adapter builds a call: one float32 logits row per request (the record's row repeated
for each draw), chunks of output rows, k / p None where the row sets neither (k 0 or >= V
off, p >= 1 off). Per-request generators: draw i is the request (script seed, subsequence
i, offset 0), its torch.Generator seeded with the adapter's 63-bit blake2b of those words.
gumbel_sample: draw i has the script's seed and position i, as the adapter passes a
request's seed and offset. Unseeded subjects: the default generator seeded once per call.
The seeded subjects' batch_invariance scripts call them on batches of requests (_BATCH).
Kept apart from vllm_shipped, which holds the calls themselves, to keep each file short.
"""

from __future__ import annotations

from ..script_call import ScriptCall

_IMPORTS = """import torch
# vLLM's modules, unmodified, from the extracted tree, put first on the path as the adapter does
sys.path.insert(0, os.path.join(os.environ.get("SAMPLECHECK_VLLM_TREE", "build/shipped/vllm"), "site"))
from vllm.v1.sample.ops import topk_topp_sampler"""

_DRAW = """
CHUNK_ELEMENTS = {chunk}  # logits per call, as the adapter chunks its output rows
SEEDED = {seeded}  # a torch.Generator per request; else the default generator


def request_generator(seed, subsequence, offset, device):
    \"\"\"The adapter's generator of request (seed, subsequence, offset): the 63-bit blake2b of the words.\"\"\"
    digest = hashlib.blake2b(np.array([seed, subsequence, offset], dtype=np.uint64).tobytes(), digest_size=8).digest()
    return torch.Generator(device=device).manual_seed(int.from_bytes(digest, "little") & ((1 << 63) - 1))


def generators(seed, start, end, device):
    \"\"\"Draw i is the request (seed, subsequence i, offset 0).\"\"\"
    return {{i - start: request_generator(seed, i, 0, device) for i in range(start, end)}}


def k_and_p(params, vocab, m, device):
    \"\"\"k and p per request as vLLM's InputBatch passes them: None where no row sets them.\"\"\"
    k, p = int(params["top_k"]), float(params["top_p"])
    k = None if k <= 0 or k >= vocab else torch.full((m,), k, dtype=torch.int32, device=device)
    p = None if p >= 1 else torch.full((m,), p, dtype=torch.float32, device=device)
    return k, p


def draw(row, params, n, seed, device):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if not SEEDED:
        torch.manual_seed(seed)  # vLLM draws from the device's default generator
    logits = torch.from_numpy(row).to(device)
    step = max(1, CHUNK_ELEMENTS // row.size)
    tokens = []
    for start in range(0, n, step):
        end = min(n, start + step)
        x = logits.expand(end - start, -1).contiguous()  # one row per request; the call may write it
        k, p = k_and_p(params, row.size, end - start, device)
        g = generators(seed, start, end, device) if SEEDED else {{}}
        tokens.append(call(x, k, p, g))
    return torch.cat(tokens).cpu().numpy()
"""

# batch_invariance's script (repro_batch): the requests' generators as the adapter seeds them
# (generator_seeds), one call per chunk of output rows as the adapter splits a batch.
_BATCH = """
def draw_requests(row, params, requests, device):
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    logits = torch.from_numpy(row).to(device)
    step = max(1, CHUNK_ELEMENTS // row.size)
    tokens = []
    for start in range(0, len(requests), step):
        chunk = requests[start : start + step]
        x = logits.expand(len(chunk), -1).contiguous()  # one row per request; the call may write it
        k, p = k_and_p(params, row.size, len(chunk), device)
        tokens.append(call(x, k, p, {i: request_generator(*r, device) for i, r in enumerate(chunk)}))
    return torch.cat(tokens).cpu().numpy()
"""

_SAMPLER = """

def call(x, k, p, g):
    return sampler().{method}(x, g, k, p)[0]


_built = []


def sampler():
    \"\"\"TopKTopPSampler as vLLM builds it (logprobs_mode raw_logprobs), once.\"\"\"
    if not _built:
        os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")  # __init__'s probe imports the attention backend
        _built.append(topk_topp_sampler.TopKTopPSampler(logprobs_mode="raw_logprobs", use_fp64_gumbel={fp64}))
    return _built[0]
"""

_MASKED = """

def call(x, k, p, g):
    \"\"\"The adapter's masking route, then forward_native's softmax and random_sample.\"\"\"
{masking}
    return topk_topp_sampler.random_sample(x.softmax(dim=-1, dtype=torch.float32), g)
"""

_MASKS: dict[str, tuple[str | None, str]] = {  # route: (when it masks, the mask)
    "pytorch": (None, "topk_topp_sampler.apply_top_k_top_p_pytorch(x, k, p, allow_cpu_sync=False)"),
    "top_k_only": ("k is not None", "topk_topp_sampler.apply_top_k_only(x, k)"),
    "triton": ("k is not None or p is not None", "topk_topp_triton.apply_top_k_top_p_triton(x, k, p)"),
}

_GUMBEL_DRAW = """
CHUNK_ELEMENTS = {chunk}  # logits per call, as the adapter chunks its output rows


def draw(row, params, n, seed, device):
    \"\"\"Draw i: one request state, the script's seed, position i, temperature 1.\"\"\"
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    logits = torch.from_numpy(row).to(device)
    step = max(1, CHUNK_ELEMENTS // row.size)
    tokens = []
    for start in range(0, n, step):
        end = min(n, start + step)
        m = end - start
        tokens.append(
            gumbel.gumbel_sample(
                logits.expand(m, -1).contiguous(),
                torch.arange(m, device=device),
                torch.ones(m, dtype=torch.float32, device=device),
                torch.full((m,), seed, dtype=torch.int64, device=device),
                torch.arange(start, end, dtype=torch.int64, device=device),
                apply_temperature=True,
                is_drafting=False,
            )
        )
    return torch.cat(tokens).cpu().numpy()
"""

_RUN = "SAMPLECHECK_VLLM_TREE=build/shipped/vllm python3 {script} [--device cpu|cuda]"


def _call(
    what: str,
    imports: str,
    code: str,
    run: str = _RUN,
    stdlib: tuple[str, ...] = ("hashlib", "os"),
    batch: str = "",
) -> ScriptCall:
    return ScriptCall(
        what=f"{what}, as samplecheck_subject.adapters.vllm_shipped calls it",
        imports=imports,
        code=code,
        packages=("vllm wheel", "torch", "numpy"),
        run=run + "  (with vLLM installed in full, the tree need not exist)",
        stdlib=stdlib,
        batch=batch,
    )


def script_calls(chunk: int) -> dict[str, ScriptCall]:
    """Every vLLM sampler subject's call; `chunk` the adapter's CHUNK_ELEMENTS."""
    calls: dict[str, ScriptCall] = {}
    for name, seeded, fp64 in (
        ("vllm.forward_native", True, False),
        ("vllm.forward_native.fp64", True, True),
        ("vllm.forward_native.unseeded", False, False),
    ):
        code = _DRAW.format(chunk=chunk, seeded=seeded) + _SAMPLER.format(method="forward_native", fp64=fp64)
        what = f"TopKTopPSampler(use_fp64_gumbel={fp64}).forward_native"
        calls[name] = _call(what, _IMPORTS, code, batch=_BATCH if seeded else "")
    flashinfer = _IMPORTS + "\nimport flashinfer.sampling  # noqa: F401 - forward_cuda's flashinfer_sample reads it"
    calls["vllm.forward_cuda.flashinfer"] = _call(
        "TopKTopPSampler.forward_cuda (flashinfer_sample)",
        flashinfer,
        _DRAW.format(chunk=chunk, seeded=False) + _SAMPLER.format(method="forward_cuda", fp64=False),
        "SAMPLECHECK_VLLM_TREE=build/shipped/vllm PYTHONPATH=carry/flashinfer python3 {script}",
    )
    for route, subject in (
        ("pytorch", "vllm.apply_top_k_top_p_pytorch+random_sample"),
        ("top_k_only", "vllm.apply_top_k_only+random_sample"),
        ("triton", "vllm.apply_top_k_top_p_triton+random_sample"),
    ):
        skip, mask = _MASKS[route]
        imports = (
            _IMPORTS.replace("topk_topp_sampler", "topk_topp_sampler, topk_topp_triton", 1)
            if route == "triton"
            else _IMPORTS
        )
        masking = f"    x = {mask}" if skip is None else f"    if {skip}:\n        x = {mask}"
        code = _DRAW.format(chunk=chunk, seeded=True) + _MASKED.format(masking=masking)
        calls[subject] = _call(f"{mask.split('(')[0]} and random_sample", imports, code, batch=_BATCH)
    calls["vllm.gumbel_sample"] = _call(
        "vllm.v1.worker.gpu.sample.gumbel.gumbel_sample",
        _IMPORTS.replace(
            "from vllm.v1.sample.ops import topk_topp_sampler", "from vllm.v1.worker.gpu.sample import gumbel"
        ),
        _GUMBEL_DRAW.format(chunk=chunk),
        _RUN + "  (on the CPU: TRITON_INTERPRET=1 TORCHDYNAMO_DISABLE=1)",
        ("os",),
    )
    return calls
