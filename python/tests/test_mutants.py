"""Python versions of catalog mutants (docs/bug-catalog.md, kernels/mutant_catalog.h), each
killed through the protocol by the check the catalog names; the correct sampler passes
the same check on the same seed, so each kill is the defect's."""

import pytest

from conftest import subject_command

KILLED_BY = {  # kernels/mutant_catalog.h
    "S02": "offset_advancement",
    "S03": "per_request_seeds",
    "S04": "batch_reorder",
    "S06": "ties",
    "S07": "goodness_of_fit",
    "S08": "degenerate_rows",
    "S09": "parameter_routing",
    "S10": "parallel_samples",
}


@pytest.mark.parametrize("planted", sorted(KILLED_BY))
def test_mutant_is_killed_by_its_check(run_qualify, planted):
    check = KILLED_BY[planted]
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:subjects", "--subject",
                        f"numpy.sort_filter:{planted}"), "--budget", "standard", "--checks", check)
    assert status == 1, table
    rows = [line for line in table.splitlines() if line.startswith(check)]
    assert rows and any(" FAIL " in f" {line} " for line in rows), table


@pytest.mark.parametrize("check", sorted(set(KILLED_BY.values())))
def test_correct_sampler_passes_each_killing_check(run_qualify, check):
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:subjects", "--subject", "numpy.sort_filter"),
        "--budget", "standard", "--checks", check)
    assert status == 0, table
