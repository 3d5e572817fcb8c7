"""adapters.flashinfer_cake without FlashInfer, torch or a GPU: the descriptors declare what
cake states (docs/shipped/flashinfer-cake.md, "FlashInfer's cake sampler"); the adapter's
call path, run over numpy arrays against a stand-in module (tests/cake_fakes.py), asks every
call's route of cake_sampling_route with the call's own tensors and reports it on every row
of that call, one chunk at a time; samplecheck's ties check judges each draw by the route
its own call reports, though one row takes the pipeline in one call and a fallback in
another (a stand-in that reports a fallback while drawing by the pipeline's rule fails); and
the entry point is skipped with its reason where flashinfer does not import
(test_extract_shipped.py)."""

from __future__ import annotations

import numpy as np
import pytest

from cake_fakes import SLAB, FakeCake
from samplecheck_subject.adapters import flashinfer_cake
from samplecheck_subject.batch import SubjectError
from samplecheck_subject.descriptor import from_json


def test_the_descriptors_declare_what_cake_states():
    d = {name: desc for name, (_, desc) in flashinfer_cake.DESCRIPTORS.items()}
    main = d["flashinfer.cake.top_k_top_p_sampling_from_probs"]
    half = d["flashinfer.cake.top_k_top_p_sampling_from_probs.16bit"]
    for desc in (main, half):
        assert from_json(desc.to_json()).to_json() == desc.to_json()  # the host's rules, round trip
        assert (desc.memory_space, desc.input_kind, desc.filter_order) == ("cuda", "probs", "top_k_first")
        assert (desc.rng_policy, desc.probs_normalisation, desc.inputs) == (
            "subject_generator",
            "renormalise",
            "preserved",
        )
        assert [(r.name, r.tie_policy) for r in desc.routes] == [
            ("pipeline", "lowest_index"),
            ("fallback:dtype", "keep_ties"),
            ("fallback:layout", "keep_ties"),
            ("fallback:arch", "keep_ties"),
            ("fallback:device", "keep_ties"),
            ("fallback:no_top_k", "keep_ties"),
            ("fallback:top_k_disabled", "keep_ties"),
            ("fallback:top_k_gt_slab", "keep_ties"),
            ("fallback:vocab_too_large", "keep_ties"),
        ]
    assert (tuple(main.input_dtypes), main.tie_policy, main.degenerate_rows) == (
        ("f32",),
        "lowest_index",
        "treat_as_zero",
    )
    assert (tuple(half.input_dtypes), half.tie_policy, half.degenerate_rows) == (
        ("bf16", "f16"),
        "keep_ties",
        "undefined",
    )


def test_the_host_declaration_where_it_cannot_run():
    assert all(d.memory_space == "host" for _, d in flashinfer_cake.descriptors("host"))


def _table(rows, vocab, seed=1):
    rng = np.random.default_rng(seed)
    t = rng.random((rows, vocab)).astype(np.float32)
    return t / t.sum(axis=1, keepdims=True)


def test_each_chunk_reports_the_route_cake_gives_its_own_call(monkeypatch):
    vocab = 128
    monkeypatch.setattr(flashinfer_cake, "CHUNK_ELEMENTS", 4 * vocab)  # 4 output rows a call
    table = _table(3, vocab)
    # Input rows: k 3 (pipeline), k 100 (> SLAB), k off (vocab). Output rows in chunks of 4:
    # [0 0 0 0] pipeline, [0 1 0 0] top_k_gt_slab, [2 0 0 0] top_k_disabled, [0 0] pipeline.
    source = np.array([0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 0])
    k = np.array([3, 100, vocab], np.int32)
    p = np.array([0.9, 1.0, 1.0], np.float32)
    cake = FakeCake()
    tokens, valid, routes = flashinfer_cake.sample_rows(cake, table, source, k, p, 12345, np.concatenate)
    idx = flashinfer_cake.ROUTE_INDEX
    expected = ["pipeline"] * 4 + ["fallback:top_k_gt_slab"] * 4 + ["fallback:top_k_disabled"] * 4 + ["pipeline"] * 2
    assert routes == [idx[r] for r in expected]
    assert [c["route"] for c in cake.calls] == [
        "pipeline",
        "fallback:top_k_gt_slab",
        "fallback:top_k_disabled",
        "pipeline",
    ]
    # The route was asked of the tensors and top_k_max the call got, and the call's seeds differ.
    for asked, call in zip(cake.routes_asked, cake.calls):
        np.testing.assert_array_equal(asked[0], call["probs"])
        np.testing.assert_array_equal(asked[1], call["top_k"])
        assert asked[2] == call["top_k_max"] == int(call["top_k"].max())
    assert len({c["philox_seed"] for c in cake.calls}) == 4
    np.testing.assert_array_equal(cake.calls[1]["top_k"], [3, 100, 3, 3])
    assert tokens.shape == (14,) and valid.all()
    # Rows of input 0 on the pipeline keep its 3 largest.
    top3 = set(np.argsort(-table[0])[:3].tolist())
    assert {int(t) for t, s in zip(tokens, source) if s == 0} <= top3


def test_the_same_call_gives_the_same_tokens_and_another_call_other_streams():
    table, source = _table(2, 32), np.array([0, 1, 0, 1])
    k, p = np.array([32, 32], np.int32), np.array([1.0, 1.0], np.float32)
    a = flashinfer_cake.sample_rows(FakeCake(), table, source, k, p, 7, np.concatenate)
    b = flashinfer_cake.sample_rows(FakeCake(), table, source, k, p, 7, np.concatenate)
    np.testing.assert_array_equal(a[0], b[0])
    assert flashinfer_cake.chunk_seed(7, 0) != flashinfer_cake.chunk_seed(8, 0) != flashinfer_cake.chunk_seed(7, 1)


def test_a_row_with_no_positive_entry_is_invalid_and_nan_rows_are_not():
    vocab = 16
    table = _table(4, vocab)
    table[0] = 0.0
    table[1, :] = np.nan
    table[1, 5] = 0.25  # NaN everywhere but one positive entry: valid
    table[2] = -0.0
    table[2, 3] = np.inf  # +inf: valid
    table[3] = np.nan
    k, p = np.full(4, 4, np.int32), np.ones(4, np.float32)
    tokens, valid, _ = flashinfer_cake.sample_rows(FakeCake(), table, np.arange(4), k, p, 3, np.concatenate)
    assert valid.tolist() == [False, True, True, False]
    assert (tokens[1], tokens[2]) == (5, 3)


def test_a_route_the_table_does_not_hold_is_an_error():
    class NewRoute(FakeCake):
        def cake_sampling_route(self, probs, top_k, top_k_max):
            return "fallback:something_new"

    with pytest.raises(SubjectError, match="fallback:something_new"):
        flashinfer_cake.sample_rows(
            NewRoute(), _table(1, 8), np.arange(1), np.array([2], np.int32), np.ones(1, np.float32), 1, np.concatenate
        )


def test_the_recorded_files_are_the_wheels():
    assert len(flashinfer_cake.RAN_FILES) == 22
    assert all(f.startswith("flashinfer/") for f in flashinfer_cake.RAN_FILES)
    assert SLAB < 1024  # the stand-in's slab is small so that both routes are reached


def test_the_ties_check_judges_each_draw_by_its_calls_route(run_checks):
    # A chunk's route is its largest k: a row with k = 3 takes "pipeline" (lowest_index) in a chunk
    # of small k and "fallback:top_k_disabled" (keep_ties) in a chunk holding an unfiltered row.
    # The ties check judges each draw by its own call's route and passes.
    status, table = run_checks("cake_fakes:subjects", "fake.cake.top_k_top_p_sampling_from_probs", "ties,replay", "-v")
    assert status == 0, table


def test_a_route_report_that_lies_fails_the_ties_check(run_checks):
    status, table = run_checks(
        "cake_fakes:subjects", "fake.cake.top_k_top_p_sampling_from_probs:route_lied", "ties", "-v"
    )
    assert status == 1, table
    failed = [line for line in table.splitlines() if "[FAIL]" in line]
    assert failed and any("fallback:top_k_gt_slab" in line for line in failed), table
