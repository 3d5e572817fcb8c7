"""samplecheck_subject.adapters.jax_categorical without jax: the request's key words, the
chunk sizes, the declared contract, and a machine without jax skipped (exit 77), never
passed. test_jax_categorical.py judges the adapter with jax itself."""

import os

import numpy as np
import pytest

from samplecheck_subject.adapters import jax_categorical as jc

TARGET = "samplecheck_subject.adapters.jax_categorical:subjects"


def test_key_words_split_seed_and_position_into_32_bit_words():
    seed = np.array([0, 5, 2**32 + 5, 2**64 - 1], dtype=np.uint64)
    position = np.array([0, 2**32, 7, 2**63 + 3], dtype=np.uint64)
    words = jc.key_words(seed, position)
    assert words.dtype == np.uint32 and words.shape == (4, 4)
    assert words.tolist() == [[0, 0, 0, 0], [5, 0, 0, 1], [5, 1, 7, 0], [2**32 - 1, 2**32 - 1, 3, 2**31]]
    # The high words go in: seeds equal in their low word keep distinct keys.
    assert words[1].tolist() != words[2].tolist()


@pytest.mark.parametrize("chunk", [jc.CHUNK_ELEMENTS, jc.ACCELERATOR_CHUNK_ELEMENTS])
def test_row_bucket_is_a_power_of_two_within_the_chunk(chunk):
    for rows in (1, 2, 3, 100, 4096, 65536):
        for vocab in (2, 1000, 32000, 65537, 151936, chunk * 2):
            b = jc.row_bucket(rows, vocab, chunk)
            assert b & (b - 1) == 0 and b >= 1
            assert b * vocab <= max(chunk, vocab)
            assert b >= min(rows, chunk // vocab) or b * 2 * vocab > chunk


def test_power_of_two_pads_input_rows():
    assert [jc.power_of_two(n) for n in (0, 1, 2, 3, 5, 256, 257)] == [1, 1, 2, 4, 8, 256, 512]


def test_descriptors_declare_jaxs_contract(monkeypatch):
    monkeypatch.delenv("SAMPLECHECK_JAX_DTYPES", raising=False)
    pairs = jc.descriptors()
    assert [d.name for _, d in pairs] == [v[0] for v in jc.VARIANTS]
    for _, d in pairs:
        j = d.to_json()  # validates
        assert j["rng_policy"] == "request_keyed" and j["uniform_rule"] == "undeclared"
        assert j["input_kind"] == "logits" and j["filters"] == ["temperature"]
        assert j["degenerate_rows"] == "undefined" and j["memory_space"] == "host"
        assert j["input_dtypes"] == ["f32", "bf16", "f16"] and "tie_policy" not in j


def test_dtypes_narrowed_by_the_environment(monkeypatch):
    monkeypatch.setenv("SAMPLECHECK_JAX_DTYPES", "bf16,f16")
    assert jc.declared_dtypes() == ("bf16", "f16")
    monkeypatch.setenv("SAMPLECHECK_JAX_DTYPES", "f64")
    with pytest.raises(ValueError):
        jc.declared_dtypes()


def test_without_jax_samplecheck_skips(run_checks, tmp_path):
    """A `jax` that fails to import (a stand-in module first on the path): the hello says why
    and samplecheck skips the subject (exit 77), never passes it."""
    (tmp_path / "jax.py").write_text("raise ImportError('jax stand-in: not installed')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    rc, out = run_checks(
        TARGET,
        "jax.categorical",
        "replay",
        env=env,
        timeout=120,
    )
    assert rc == 77, out
    assert "jax is not installed" in out
