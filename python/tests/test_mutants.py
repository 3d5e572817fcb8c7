"""Python versions of catalog mutants (docs/bug-catalog.md, kernels/mutant_catalog.h), each
killed through the protocol by the check the catalog names, at the quick budget. The
correct sampler passes every one of these checks at the same budget and seed
(test_battery.py; a selected check draws what it draws in a full run), so each kill is
the planted defect's."""

import pytest

KILLED_BY = {  # kernels/mutant_catalog.h
    "S02": "offset_advancement",
    "S03": "per_request_seeds",
    "S04": "batch_reorder",
    "S06": "ties",
    "S07": "goodness_of_fit",
    "S08": "degenerate_rows",
    "S09": "parameter_routing",
    "S10": "parallel_samples",
    "S11": "tail",
    "X01": "replay",
}


@pytest.mark.parametrize("planted", sorted(KILLED_BY))
def test_mutant_is_killed_by_its_check(require_killed, planted):
    require_killed("samplecheck_subject.numpy_samplers:subjects", f"numpy.sort_filter:{planted}", KILLED_BY[planted])
