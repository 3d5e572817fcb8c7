"""Standalone scripts of the collision checks (samplecheck_subject.repro_collision): a record of
offset_advancement, parallel_samples or per_request_seeds' statistics keeps the check's pairs of
requests; its script draws them again with the subject's own call and counts the equal pairs.
Planted: S02 (the offset frozen), S03 (every request read at element 0) and S10 (outputs of one
input row share a draw) each fail the checks that see them; the correct rule on the same
record is not reproduced; a broken or older record is refused, naming its field."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import qualify, subject_command
from test_repro_script import NUMPY, generate, generated_and_run, refused, write_record

CASES = {"S02": ("offset_advancement",), "S03": ("per_request_seeds", "parallel_samples"), "S10": ("parallel_samples",)}


@pytest.fixture(scope="module")
def records(samplecheck_bin, tmp_path_factory):
    """{(planted, check): (path, record)} of every failed collision check of the planted rules."""
    found = {}
    for planted, checks in CASES.items():
        folder = tmp_path_factory.mktemp(f"collision-{planted}")
        status, table = qualify(
            samplecheck_bin,
            subject_command(NUMPY, "--subject", f"numpy.sort_filter:{planted}"),
            *("--budget", "quick", "--checks", ",".join(checks), "--repro-dir", str(folder)),
            *("--report-dir", str(folder / "report")),
        )
        assert status == 1, table
        found[("report", planted)] = json.loads((folder / "report" / "report.json").read_text())
        for check in checks:
            path = folder / f"numpy.sort_filter_{planted}.{check}.f32.json"
            found[(planted, check)] = (path, json.loads(path.read_text()))
    return found


FAILED = [(p, c) for p, checks in CASES.items() for c in checks]


@pytest.mark.parametrize("planted, check", FAILED)
def test_the_checks_equal_pairs_reproduce(records, tmp_path, planted, check):
    path, record = records[(planted, check)]
    evidence = record["evidence"]
    assert "tokens" not in evidence, evidence  # per_request_seeds' statistics, not its [a, a, ...] call
    done = generated_and_run(path, tmp_path / "collision.py")
    assert done.returncode == 1, done.stdout
    pairs, equal = evidence["pairs"], evidence["collisions"]
    assert f"{equal} equal pairs of {pairs}" in done.stdout, done.stdout
    assert f"the check's: {equal} equal pairs" in done.stdout, done.stdout
    assert "REPRODUCED: P(X >= " in done.stdout and "NOT" not in done.stdout
    assert sum(evidence["calls"]) == 2 * pairs
    assert evidence["calls"] == ([pairs, pairs] if check == "offset_advancement" else [2 * pairs])


def test_a_correct_rule_draws_independent_pairs(records, tmp_path):
    """The same pairs of requests drawn by the correct rule: no flood of equal tokens."""
    for planted, check in FAILED:
        _, record = records[(planted, check)]
        correct = dict(record, subject="numpy.sort_filter")
        done = generated_and_run(write_record(tmp_path, correct, f"{planted}.{check}.json"), tmp_path / "ok.py")
        assert done.returncode == 0, done.stdout
        assert "NOT REPRODUCED: P(X >= " in done.stdout, done.stdout


def test_reports_leave_the_requests_to_the_record(records):
    """The record keeps the requests and the row; report.json only the check's numbers."""
    _, record = records[("S02", "offset_advancement")]
    assert {"requests_u64", "row_data", "collision_prob", "calls"} <= set(record["evidence"])
    (run,) = records[("report", "S02")]["runs"]
    judged = [c for c in run["checks"] if c["check"] == "offset_advancement" and c["dtype"] == "f32"]
    assert judged and judged[0]["verdict"] == "FAIL", run["checks"]
    evidence = judged[0]["evidence"]
    assert "requests_u64" not in evidence and "row_data" not in evidence, sorted(evidence)
    assert evidence["collisions"] == record["evidence"]["collisions"] and "collision_prob" in evidence


def test_broken_collision_records_are_refused(records, tmp_path):
    _, record = records[("S02", "offset_advancement")]

    def broken(name, change):
        bad = copy.deepcopy(record)
        change(bad["evidence"])
        return write_record(tmp_path, bad, f"{name}.json")

    refused(broken("old", lambda e: e.pop("requests_u64")), "evidence.requests_u64", "written before")
    refused(broken("text", lambda e: e.update(requests_u64="not base64!")), "evidence.requests_u64", "not base64")
    refused(broken("short", lambda e: e.update(requests_u64="AAAAAAAAAAA=")), "evidence.requests_u64", "bytes")
    refused(broken("calls", lambda e: e.update(calls=[1, 2])), "evidence.calls", "does not add up")
    refused(broken("prob", lambda e: e.update(collision_prob=2.0)), "evidence.collision_prob", "outside")
    refused(broken("row", lambda e: e.pop("row_data")), "evidence.row_data.values_f32", "missing")
    unscripted = dict(record, subject="numpy.sort_filter:S07")  # a rule that declares no batch call
    refused(write_record(tmp_path, unscripted, "s07.json"), "subject", "declares no batch call")
    made = generate(write_record(tmp_path, dict(record, kind="matmul"), "matmul.json"), tmp_path / "m.py")
    assert made.returncode == 2 and "field 'kind'" in made.stderr, made.stderr
