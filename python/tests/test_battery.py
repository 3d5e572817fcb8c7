"""Python subjects judged by samplecheck through `qualify --exec` (needs $SAMPLECHECK_BIN)."""

from conftest import subject_command


def test_numpy_sampler_passes_the_quick_battery(run_qualify):
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:subjects", "--subject", "numpy.sort_filter"),
        "--budget", "quick")
    assert status == 0, table
    assert "PASS" in table and "FAIL" not in table


def test_numpy_matmul_passes_the_quick_battery(run_qualify):
    status, table = run_qualify(subject_command("samplecheck_subject.numpy_matmul:subjects"), "--budget", "quick")
    assert status == 0, table
    assert "batch_invariance" in table and "FAIL" not in table
