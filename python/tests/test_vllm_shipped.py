"""The vLLM 0.33.0 manifest and adapter without the wheel (no network, no GPU): the manifest
parses and shims no module under test, every shim exists and says why; the adapter's
descriptors state the contracts docs/shipped/vllm.md gives; the per-request generator seeds are
keyed by the request alone; and, where torch imports, the adapter calls a fake tree built
here as it calls vLLM's (k / p as vLLM's InputBatch passes them, a generator per row,
samplecheck's own logits array handed over where forward_native may write it)."""

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from conftest import PACKAGE_ROOT
from samplecheck_subject.adapters import vllm_shipped

SCRIPTS = os.path.join(os.path.dirname(PACKAGE_ROOT), "tools", "scripts")
_spec = importlib.util.spec_from_file_location("extract_shipped", os.path.join(SCRIPTS, "extract_shipped.py"))
assert _spec is not None and _spec.loader is not None
extract_shipped = importlib.util.module_from_spec(_spec)
sys.modules["extract_shipped"] = extract_shipped
_spec.loader.exec_module(extract_shipped)


def manifest():
    return extract_shipped.read_manifest(extract_shipped.Path(SCRIPTS) / "shipped" / "vllm.toml")


def test_the_manifest_shims_plumbing_only_and_each_shim_says_why():
    m = manifest()
    assert (m.package, m.version, m.root) == ("vllm", "0.33.0", "vllm")
    assert len(m.wheel_sha256) == 64
    assert set(m.under_test) == {vllm_shipped.SAMPLER, vllm_shipped.TRITON, vllm_shipped.GUMBEL, vllm_shipped.MATMUL}
    assert not set(m.under_test) & set(m.shim_for)
    for module, why in m.shim_for.items():
        assert why.strip(), module
        base = m.shims_dir / module.replace(".", "/")
        shim = base / "__init__.py" if (base / "__init__.py").is_file() else base.with_suffix(".py")
        assert shim.is_file(), module
        assert "samplecheck's shim for" in shim.read_text(), shim


def test_no_file_of_the_shims_folder_is_unnamed_in_the_manifest():
    m = manifest()
    named = {module.replace(".", "/") for module in m.shim_for}
    for path in m.shims_dir.rglob("*.py"):
        relpath = path.relative_to(m.shims_dir).with_suffix("").as_posix()
        assert relpath.removesuffix("/__init__") in named, relpath


def test_the_descriptors_state_vllms_contracts():
    d = {name: desc.validate() for name, (_, desc) in vllm_shipped.DESCRIPTORS.items()}
    native = d["vllm.forward_native"]
    assert (native.input_kind, tuple(native.input_dtypes), native.rng_policy) == ("logits", ("f32",), "per_request")
    assert (native.tie_policy, native.filter_order, native.inputs) == ("keep_ties", "top_k_first", "mutated")
    assert native.degenerate_rows == "undefined"  # NaN / all -inf rows: argmax of NaN, no promise
    assert d["vllm.forward_native.unseeded"].rng_policy == "subject_generator"
    assert tuple(d["vllm.apply_top_k_only+random_sample"].filters) == ("top_k",)
    gumbel = d["vllm.gumbel_sample"]
    assert (gumbel.rng_policy, gumbel.inputs, tuple(gumbel.filters)) == ("request_keyed", "preserved", ())
    cuda_only = {desc.name for _, desc in vllm_shipped.cuda_descriptors()}
    assert cuda_only == {
        "vllm.apply_top_k_top_p_triton+random_sample",
        "vllm.forward_cuda.flashinfer",
        "vllm.matmul_persistent",
        "vllm.mm_batch_invariant",
        "vllm.linear_batch_invariant",
    }
    assert all(d[n].memory_space == "cuda" for n in cuda_only)


def test_a_requests_generator_seed_is_keyed_by_its_seed_subsequence_and_offset_alone():
    def batch(seed, subsequence, offset):
        return types.SimpleNamespace(
            seed=np.array(seed, np.uint64),
            subsequence=np.array(subsequence, np.uint64),
            offset=np.array(offset, np.uint64),
        )

    seeds = vllm_shipped.generator_seeds(batch([5, 5, 5, 6], [0, 1, 0, 0], [0, 0, 1, 0]))
    assert len(set(seeds)) == 4 and all(0 <= s < 1 << 63 for s in seeds)
    assert vllm_shipped.generator_seeds(batch([6, 5], [0, 0], [0, 0])) == [seeds[3], seeds[0]]


def test_the_flashinfer_route_names_flashinfer_in_the_hello_or_says_why_it_cannot(tmp_path):
    # forward_cuda imports flashinfer.sampling at its first call, after the hello; imported
    # before it, the hello records FlashInfer's version (serve.environment).
    package = tmp_path / "flashinfer"
    package.mkdir()
    (package / "__init__.py").write_text("__version__ = '0.0.2'\n")
    (package / "sampling.py").write_text("\n")
    script = (
        "import json, sys; sys.path.insert(0, sys.argv[1])\n"
        "from samplecheck_subject.adapters import vllm_shipped\n"
        "from samplecheck_subject.serve import environment\n"
        "before = 'flashinfer' in environment()['packages']\n"
        "why = vllm_shipped.flashinfer_before_the_hello()\n"
        "print(json.dumps([before, why, environment()['packages'].get('flashinfer')]))\n"
    )

    def run() -> list[object]:
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PYTHONPATH": PACKAGE_ROOT},
        )
        assert done.returncode == 0, done.stderr
        result: list[object] = json.loads(done.stdout)
        return result

    assert run() == [False, None, "0.0.2"]
    (package / "sampling.py").write_text("raise ImportError('no libcudart here')\n")
    before, why, version = run()
    assert not before and version == "0.0.2"
    assert why == "flashinfer.sampling does not import: ImportError: no libcudart here"


# A stand-in for vLLM's sampler module that records how it was called.
FAKE_SAMPLER = """
import torch
CALLS = []
class TopKTopPSampler:
    def __init__(self, logprobs_mode="raw_logprobs", use_fp64_gumbel=False):
        self.logprobs_mode, self.use_fp64_gumbel = logprobs_mode, use_fp64_gumbel
    def forward_native(self, logits, generators, k, p):
        CALLS.append((logits, dict(generators), k, p))
        if k is not None:
            apply_top_k_top_p_pytorch(logits, k, p)
        logits.mul_(2)  # vLLM may write its logits in place
        return logits.argmax(dim=-1), None
def apply_top_k_top_p_pytorch(logits, k, p):
    return logits
"""
FAKE_FILES = {
    "vllm/__init__.py": "",
    "vllm/v1/__init__.py": "",
    "vllm/v1/sample/__init__.py": "",
    "vllm/v1/sample/ops/__init__.py": "",
    "vllm/v1/sample/ops/topk_topp_sampler.py": FAKE_SAMPLER,
    "vllm/v1/sample/ops/topk_topp_triton.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/gpu/__init__.py": "",
    "vllm/v1/worker/gpu/sample/__init__.py": "",
    "vllm/v1/worker/gpu/sample/gumbel.py": "",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/determinism/__init__.py": "",
    "vllm/model_executor/determinism/batch_invariant.py": "",
}


@pytest.fixture
def fake_tree(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    for relpath, text in FAKE_FILES.items():
        (tmp_path / "site" / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "site" / relpath).write_text(text)
    upstream = {p: hashlib.sha256(t.encode()).hexdigest() for p, t in FAKE_FILES.items()}
    (tmp_path / "provenance.json").write_text(
        json.dumps(
            {
                "package": "vllm",
                "version": "0.33.0",
                "wheel_sha256": "0" * 64,
                "root": "vllm",
                "upstream": upstream,
                "shims": {},
            }
        )
    )
    monkeypatch.setenv(vllm_shipped.TREE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(vllm_shipped, "_loaded", {})
    monkeypatch.setattr(vllm_shipped, "device", lambda: "cpu")
    yield
    for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
        del sys.modules[name]
    sys.path.remove(str((tmp_path / "site").resolve()))


def test_forward_native_gets_the_calls_logits_k_p_and_a_generator_per_row(fake_tree):
    v = 8
    logits = np.arange(3 * v, dtype=np.float32).reshape(3, v)
    b = types.SimpleNamespace(
        num_output_rows=3,
        vocab_size=v,
        input=logits,
        row_index=None,
        top_k=np.array([0, 3, 9], np.int32),
        top_p=np.ones(3, np.float32),
        seed=np.array([1, 2, 3], np.uint64),
        subsequence=np.zeros(3, np.uint64),
        offset=np.zeros(3, np.uint64),
    )
    tokens, valid, routes = vllm_shipped.forward_native(True)(b)
    assert tokens.tolist() == [v - 1] * 3 and valid is None
    assert routes.tolist() == [vllm_shipped.ROUTES.index(vllm_shipped.Route("pytorch", "keep_ties"))] * 3
    ((_, generators, k, p),) = sys.modules[vllm_shipped.SAMPLER].CALLS
    assert k.tolist() == [v, 3, v] and p is None  # top-k off is k = V; top_p 1 everywhere: None
    assert sorted(generators) == [0, 1, 2]
    assert logits[0, 1] == 2.0  # forward_native wrote samplecheck's own array: inputs "mutated"
    assert not vllm_shipped._sampler_module().use_fp64_gumbel
    assert vllm_shipped._sampler_module(fp64_gumbel=True).use_fp64_gumbel


def test_a_row_index_gives_forward_native_copies_and_no_k_when_none_is_set(fake_tree):
    v = 4
    logits = np.zeros((2, v), dtype=np.float32)
    b = types.SimpleNamespace(
        num_output_rows=3,
        vocab_size=v,
        input=logits,
        row_index=np.array([1, 1, 0], np.int32),
        top_k=None,
        top_p=np.array([0.5, 1.0], np.float32),
        seed=None,
        subsequence=None,
        offset=None,
    )
    _, _, routes = vllm_shipped.forward_native(False)(b)
    assert routes.tolist() == [0, 0, 0]  # no k: the fake filters nothing, route "unfiltered"
    ((x, generators, k, p),) = sys.modules[vllm_shipped.SAMPLER].CALLS
    assert x.shape == (3, v) and k is None and generators == {}
    assert p.tolist() == [1.0, 1.0, 0.5]  # per input row, expanded to the output rows


def test_the_routed_subjects_declare_the_route_table():
    d = {name: desc for name, (_, desc) in vllm_shipped.DESCRIPTORS.items()}
    routed = {n for n, desc in d.items() if getattr(desc, "routes", ())}
    assert routed == {
        "vllm.forward_native",
        "vllm.forward_native.fp64",
        "vllm.forward_native.unseeded",
        "vllm.forward_cuda.flashinfer",
    }
    assert [(r.name, r.tie_policy) for r in d["vllm.forward_cuda.flashinfer"].routes] == [
        ("unfiltered", "keep_ties"),
        ("flashinfer", "keep_ties"),
        ("triton", "keep_ties"),
        ("top_k_only", "keep_ties"),
        ("pytorch", "keep_ties"),
    ]
    assert all(desc.validate() for desc in d.values())


def test_the_route_is_the_most_specific_function_that_ran():
    calls = []
    module = types.SimpleNamespace(
        flashinfer_sample=lambda x: calls.append("fi") or "fi",
        apply_top_k_top_p_triton=lambda x: calls.append("tr") or "tr",
        apply_top_k_only=lambda x: calls.append("ko") or "ko",
    )
    # apply_top_k_top_p_pytorch calls apply_top_k_only by its module name, as vLLM's does.
    module.apply_top_k_top_p_pytorch = lambda x: module.apply_top_k_only(x)
    vllm_shipped.route_spies(module)
    vllm_shipped.route_spies(module)  # a wrapper is not wrapped again
    index = {r.name: i for i, r in enumerate(vllm_shipped.ROUTES)}
    for name, expected, returned in (
        ("flashinfer_sample", "flashinfer", "fi"),
        ("apply_top_k_top_p_triton", "triton", "tr"),
        ("apply_top_k_top_p_pytorch", "top_k_only", "ko"),
        ("apply_top_k_only", "top_k_only", "ko"),
    ):
        vllm_shipped._ran.clear()
        calls.clear()
        assert getattr(module, name)(1) == returned  # vLLM's function ran and its value came back
        assert vllm_shipped.taken_route(vllm_shipped._ran) == index[expected], name
        assert len(calls) == 1
    vllm_shipped._ran.clear()
    assert vllm_shipped.taken_route(vllm_shipped._ran) == index["unfiltered"]
    assert vllm_shipped.taken_route({"pytorch"}) == index["pytorch"]
