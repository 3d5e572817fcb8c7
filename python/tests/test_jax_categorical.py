"""samplecheck_subject.adapters.jax_categorical with jax itself: the adapter's tokens are
jax.random.categorical's on each request's key (whatever the chunking and padding), the
degenerate rows come back as jax's argmax gives them (the contract the adapter declares
"undefined" and docs/shipped/jax.md describes), and samplecheck judges replay. It needs jax
(pip install "jax[cpu]"); run as a script (ctest does), it exits 77 (skipped) without it.
"""

import json
import subprocess
import sys
import types

import numpy as np
import pytest

from samplecheck_subject import shipped
from samplecheck_subject.adapters import jax_categorical as jc

UNAVAILABLE = jc.unavailable()
if UNAVAILABLE is not None and __name__ != "__main__":
    pytest.skip(UNAVAILABLE, allow_module_level=True)


def _batch(rows, dtype, outputs, temperature=None):
    import jax.numpy as jnp

    bits = {"f32": np.float32, "bf16": jnp.bfloat16, "f16": np.float16}[dtype]
    data = np.asarray(rows, dtype=np.float32).astype(bits)
    stored = data if dtype == "f32" else data.view(np.uint16)
    g = np.random.default_rng(20261203)
    return types.SimpleNamespace(
        input=stored,
        input_dtype=dtype,
        num_input_rows=data.shape[0],
        vocab_size=data.shape[1],
        num_output_rows=outputs,
        row_index=(np.arange(outputs) % data.shape[0]).astype(np.int32),
        temperature=None if temperature is None else np.asarray(temperature, np.float32),
        seed=g.integers(0, 2**64 - 1, outputs, dtype=np.uint64, endpoint=True),
        offset=g.integers(0, 2**40, outputs, dtype=np.uint64),
    ), data


def _direct(b, data, impl, mode):
    """jax.random.categorical called once per output row, on that row's key."""
    import jax
    import jax.numpy as jnp

    words = jc.key_words(b.seed, b.offset)
    tokens = []
    for r in range(b.num_output_rows):
        i = int(b.row_index[r])
        t = 1.0 if b.temperature is None else float(b.temperature[i])
        logits = jnp.asarray(data[i])
        if t == 0:
            tokens.append(int(jnp.argmax(logits)))
            continue
        key = jc.request_key(jnp.asarray(words[r]), impl)
        tokens.append(int(jax.random.categorical(key, logits / t, mode=mode)))
    return np.array(tokens)


THREEFRY = [v for v in jc.VARIANTS if v[1] == "threefry2x32"]
RBG = [v[0] for v in jc.VARIANTS if v[1] != "threefry2x32"]


@pytest.mark.parametrize("name,impl,mode", THREEFRY)
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_tokens_are_jaxs_on_each_requests_key(name, impl, mode, dtype, monkeypatch):
    monkeypatch.setattr(jc, "CHUNK_ELEMENTS", 4 * 37)  # chunks of 4 rows, the last one padded
    g = np.random.default_rng(7)
    rows = g.standard_normal((3, 37)) * 3
    b, data = _batch(rows, dtype, 11, temperature=[1.0, 0.5, 0.0])
    tokens, valid = jc.DESCRIPTORS[name][0](b)
    assert valid is None
    assert tokens.tolist() == _direct(b, data, impl, mode).tolist()


@pytest.mark.parametrize("name", RBG)
def test_rbg_under_vmap_draws_from_the_chunks_first_key(name):
    """jax.random's documentation: with the rbg and unsafe_rbg implementations, vmap over a
    batch of keys draws the whole batch from the first key. A batch served with vmap (as the
    adapter serves it) thus gives a request other tokens in other company: what samplecheck's
    batch_invariance and batch_reorder judge."""
    g = np.random.default_rng(11)
    b, _ = _batch(g.standard_normal((1, 4000)), "f32", 64)
    alone = [int(jc.DESCRIPTORS[name][0](_slice(b, r))[0][0]) for r in range(8)]
    together = jc.DESCRIPTORS[name][0](b)[0][:8].tolist()
    assert alone != together


def _slice(b, r):
    return types.SimpleNamespace(
        **{
            **vars(b),
            "num_output_rows": 1,
            "row_index": b.row_index[r : r + 1],
            "seed": b.seed[r : r + 1],
            "offset": b.offset[r : r + 1],
        }
    )


def test_degenerate_rows_come_back_as_jaxs_argmax():
    """NaN: the first NaN; +Inf: the first +Inf; every logit -Inf: token 0 (jax's argmax over
    gumbel + logits); never flagged, so the adapter declares degenerate_rows "undefined"."""
    nan, inf = float("nan"), float("inf")
    rows = [[0.0, 1.0, nan, 0.0, nan], [0.0, inf, 0.0, inf, 0.0], [-inf] * 5, [-inf, 0.0, -inf, 0.0, 0.0]]
    b, _ = _batch(rows, "f32", 128)
    tokens, _ = jc.DESCRIPTORS["jax.categorical"][0](b)
    assert set(tokens[0::4].tolist()) == {2}
    assert set(tokens[1::4].tolist()) == {1}
    assert set(tokens[2::4].tolist()) == {0}
    assert set(tokens[3::4].tolist()) == {1, 3, 4}  # -Inf never drawn beside finite logits


def test_hello_records_jax_and_its_files():
    _, reason = jc.subjects()
    assert reason is None
    recorded = shipped.recorded()
    assert recorded["jax wheel"].startswith(__import__("jax").__version__)
    assert "jaxlib wheel" in recorded
    for relpath in jc.RAN_FILES:
        assert recorded[f"jax upstream {relpath}"].startswith("sha256:")


def f32_checks(run_checks, subject, checks, *args):
    """samplecheck's `checks` on the jax subject `subject`, f32 rows only (quick budget)."""
    module = "samplecheck_subject.adapters.jax_categorical:subjects"
    return run_checks(module, subject, checks, *args, env={"SAMPLECHECK_JAX_DTYPES": "f32"}, timeout=300)


def test_samplecheck_judges_replay(run_checks, tmp_path):
    rc, out = f32_checks(run_checks, "jax.categorical", "replay", "--report-dir", str(tmp_path))
    assert rc == 0, out
    assert "replay [f32]" in out and "pass" in out


def test_rbg_request_scripts_reproduce(run_checks, tmp_path):
    """The standalone scripts of rbg's batch_invariance and per_request_seeds records
    (samplecheck_subject.repro_batch) call jax as the adapter does, keyed by the seed the subject
    was sent (evidence.sent_seed): the request alone gives the check's token, the batch of 64
    copies of one request gives the check's two tokens; threefry's rule keeps one token."""
    checks = "batch_invariance,per_request_seeds"
    rc, out = f32_checks(run_checks, "jax.categorical.rbg", checks, "--repro-dir", str(tmp_path))
    assert rc == 1, out
    for check in checks.split(","):
        record = json.loads((tmp_path / f"jax.categorical.rbg.{check}.f32.json").read_text())
        printed = {}
        for subject, status in (("jax.categorical.rbg", 1), ("jax.categorical", 0)):
            path = tmp_path / f"{subject}.{check}.json"
            path.write_text(json.dumps(dict(record, subject=subject)))
            script = tmp_path / f"{subject}.{check}.py"
            made = subprocess.run(
                [sys.executable, "-m", "samplecheck_subject.repro_script", str(path), "-o", str(script)]
            )
            assert made.returncode == 0
            done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
            print(done.stdout, done.stderr)
            assert done.returncode == status, done.stdout
            printed[subject] = done.stdout
        evidence = record["evidence"]
        seen = [evidence["expected"]] if check == "batch_invariance" else [f"token {t}" for t in evidence["tokens"]]
        for token in seen:
            assert f": {token}; the check's: {token}" in printed["jax.categorical.rbg"]
        assert "REPRODUCED: the request drew token" in printed["jax.categorical.rbg"]
        assert "NOT REPRODUCED" in printed["jax.categorical"]  # threefry: one token per request


if __name__ == "__main__":
    if UNAVAILABLE is not None:
        print(f"SKIP: {UNAVAILABLE}")
        sys.exit(77)
    sys.exit(pytest.main(["-q", "-ra", "-p", "no:cacheprovider", __file__]))
