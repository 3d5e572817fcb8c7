"""A Python subject that raises, exits with status 0 mid-batch, hangs, replies garbage or
returns a token outside [0, V) on its first request: that check fails, naming what
happened, and the battery goes on to judge the rest (which pass)."""

import pytest

from conftest import subject_command
from faulty_subjects import FAULTS

CHECKS = "support,replay,batch_reorder"
EXPECTED_TEXT = {
    "raise": "planted: the subject raised",
    "exit0": "status 0",
    "hang": "TIMEOUT",
    "garbage": "JSON",
    "out_of_range": "outside [0,",
}


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_fails_one_check_and_the_battery_continues(run_qualify, tmp_path, fault):
    env = {"SAMPLECHECK_TEST_FAULT": fault, "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests")}
    status, table = run_qualify(subject_command("faulty_subjects:subjects"), "--checks", CHECKS,
                                "--timeout", "5", env=env, timeout=300)
    assert status == 1, table
    rows = {line.split()[0]: line for line in table.splitlines()
            if line.split() and line.split()[0] in CHECKS.split(",")}
    assert set(rows) == set(CHECKS.split(",")), table  # every check has its row: the run went on
    failed = [c for c, line in rows.items() if " FAIL" in line or "TIMEOUT" in line]
    assert failed == ["support"], table  # the first check met the fault, the others passed
    assert EXPECTED_TEXT[fault] in table, table
