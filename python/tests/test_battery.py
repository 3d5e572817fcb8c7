"""Python subjects judged by samplecheck through `qualify --exec` (needs $SAMPLECHECK_BIN)."""

from conftest import subject_command


def test_numpy_sampler_passes_the_quick_battery(run_qualify):
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:subjects", "--subject", "numpy.sort_filter"),
        "--budget",
        "quick",
    )
    assert status == 0, table
    assert "PASS" in table and "FAIL" not in table


def test_numpy_matmul_passes_the_quick_battery(run_qualify):
    # Two small shapes and the batch sizes around a 256 tile edge: the protocol's matmul path,
    # in seconds (the fixture's Qwen3-8B shapes move 100 MB a call through numpy).
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_matmul:subjects"),
        "--budget",
        "quick",
        "--shape",
        "128x256,64x2880",
        "--m",
        "1,2,7,64,255,256,257",
    )
    assert status == 0, table
    assert "batch_invariance" in table and "FAIL" not in table
