"""A Python subject that raises, exits with status 0 mid-batch, hangs, replies garbage,
returns a token outside [0, V) or writes into its input rows on its first request: that check
fails, naming what happened, and the battery goes on to judge the rest (which pass)."""

import json

import pytest

from conftest import subject_command
from faulty_subjects import FAULTS, PROCESS_FAULT_TEXT

CHECKS = "support,replay"
EXPECTED_TEXT = {
    **PROCESS_FAULT_TEXT,
    "garbage": "JSON",
    "out_of_range": "outside [0,",
    "scribble": "subject test.faulty wrote into an array it only reads (it declares inputs preserved): input[",
}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_fails_one_check_and_the_battery_continues(run_qualify, tmp_path, fault):
    env = {"SAMPLECHECK_TEST_FAULT": fault, "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests")}
    status, table = run_qualify(
        subject_command("faulty_subjects:subjects"), "--checks", CHECKS, "--timeout", "5", env=env, timeout=300
    )
    assert status == 1, table
    verdicts = {
        " ".join(line.split()[:2]): line.split()[2]
        for line in table.splitlines()
        if line[:1].strip() and line.split()[0] in CHECKS.split(",")
    }
    # Every (check, dtype) has its row: the run went on past the fault.
    assert {k.split()[0] for k in verdicts} == set(CHECKS.split(",")) and len(verdicts) == 6, table
    failed = [k for k, v in verdicts.items() if v in ("FAIL", "TIMEOUT")]
    assert failed == ["support [f32]"], table  # the first check met the fault, the others passed
    assert EXPECTED_TEXT[fault] in table, table


def test_inputs_mutated_is_a_declared_contract(run_qualify, tmp_path):
    # The same scribble, declared: the rows are sent again before every call and not compared.
    env = {
        "SAMPLECHECK_TEST_FAULT": "scribble",
        "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests"),
        "SAMPLECHECK_TEST_INPUTS": "mutated",
    }
    status, table = run_qualify(
        subject_command("faulty_subjects:subjects"), "--checks", CHECKS, "--timeout", "5", env=env, timeout=300
    )
    assert status == 0, table
    assert "wrote into an array" not in table, table


def test_time_limit_cuts_a_hung_call_and_keeps_no_verdict_for_it(run_qualify, tmp_path):
    """qualify --time-limit: the call still running at the limit is cut (no TIMEOUT: the limit
    is the run's, not the subject's hang), the checks after it are not run, and the run is
    INCOMPLETE, exit 1; report.json says so."""
    env = {"SAMPLECHECK_TEST_FAULT": "hang", "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests")}
    report = tmp_path / "report"
    status, table = run_qualify(
        subject_command("faulty_subjects:subjects"),
        *("--checks", CHECKS, "--timeout", "120", "--time-limit", "4", "--report-dir", str(report)),
        env=env,
        timeout=300,
    )
    assert status == 1, table
    assert "support [f32] [skipped]: cut at the run's time limit (4 s, --time-limit) after" in table, table
    assert table.count("not run: the run's time limit (4 s, --time-limit) came first") == 5, table
    assert "TIMEOUT" not in table and "INCOMPLETE: " in table, table
    run = json.loads((report / "report.json").read_text())["runs"][0]
    assert run["verdict"] == "INCOMPLETE", run["verdict"]


def test_time_limit_keeps_a_failure_reached_before_it(run_qualify, tmp_path):
    """A check that failed before the limit still fails the run (FAIL, not INCOMPLETE)."""
    env = {"SAMPLECHECK_TEST_FAULT": "fail_then_hang", "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests")}
    status, table = run_qualify(
        subject_command("faulty_subjects:subjects"),
        *("--checks", CHECKS, "--timeout", "120", "--time-limit", "4"),
        env=env,
        timeout=300,
    )
    assert status == 1, table
    assert "outside [0," in table and "support [bf16] [skipped]: cut at the run's time limit" in table, table
    assert "FAIL: " in table and "INCOMPLETE" not in table, table
