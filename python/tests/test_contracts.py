"""Declared contracts through the protocol: a correct subject that declares a weaker promise
(streams keyed by the batch slot; a generator of its own that refuses degenerate rows)
passes, and each check whose premise the contract breaks reports n/a with the reason,
never pass. The slot-keyed sampler is S04's mechanism: undeclared, batch_reorder kills it
(test_mutants.py)."""

import pytest

from conftest import subject_command

NA_BY_CONTRACT = {
    "numpy.sort_filter.batch_slot": {"per_request_seeds": "batch_slot", "batch_reorder": "batch_slot",
                                     "batch_invariance": "batch_slot"},
    "numpy.multinomial.generator": {
        "offset_advancement": "subject_generator", "per_request_seeds": "subject_generator",
        "batch_reorder": "subject_generator", "batch_invariance": "subject_generator",
        "degenerate_rows": "degenerate_rows error"},
}
# The rest of the battery on the slot-keyed sampler; degenerate_rows apart (below): it keeps
# every good row in its slot, so it applies under batch_slot.
SLOT_CHECKS = "support,goodness_of_fit,ties,replay,offset_advancement,per_request_seeds,batch_reorder," \
              "parallel_samples,parameter_routing,tail,batch_invariance,run_to_run"


def _verdicts(table):
    return {" ".join(line.split()[:2]): line.split()[2] for line in table.splitlines()
            if line[:1].strip() and len(line.split()) > 2 and line.split()[1].startswith("[")}


@pytest.mark.parametrize("name", sorted(NA_BY_CONTRACT))
def test_declared_contract_passes_with_reasoned_na(run_qualify, name):
    checks = ["--checks", SLOT_CHECKS] if name.endswith("batch_slot") else []
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:contract_subjects", "--subject", name),
        "--budget", "quick", *checks)
    assert status == 0, table
    verdicts = _verdicts(table)
    for check, reason in NA_BY_CONTRACT[name].items():
        rows = {k: v for k, v in verdicts.items() if k.split()[0] == check}
        assert rows and set(rows.values()) == {"n/a"}, (check, table)
        assert any(line.strip().startswith(check) and "[n/a]" in line and reason in line
                   for line in table.splitlines()), (check, table)
    assert verdicts["replay [f32]"] == "pass" and verdicts["goodness_of_fit [f32]"] == "pass", table


def test_degenerate_rows_under_batch_slot(run_qualify):
    status, table = run_qualify(
        subject_command("samplecheck_subject.numpy_samplers:contract_subjects", "--subject",
                        "numpy.sort_filter.batch_slot"), "--budget", "quick", "--checks", "degenerate_rows")
    assert status == 0, table
