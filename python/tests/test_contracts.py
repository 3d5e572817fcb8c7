"""Declared contracts through the protocol: a correct subject that declares a weaker promise
(streams keyed by the batch slot; a generator of its own that refuses degenerate rows)
passes, and each check whose premise the contract breaks reports n/a with the reason,
never pass. The slot-keyed sampler is S04's mechanism: undeclared, batch_reorder kills it
(test_mutants.py)."""

import json
import shlex

import pytest

from conftest import subject_command

CONTRACT_SUBJECTS = "samplecheck_subject.numpy_samplers:contract_subjects"
NA_BY_CONTRACT = {
    "numpy.sort_filter.batch_slot": {
        "per_request_seeds": "batch_slot",
        "batch_reorder": "batch_slot",
        "batch_invariance": "batch_slot",
    },
    "numpy.multinomial.generator": {
        "offset_advancement": "subject_generator",
        "per_request_seeds": "subject_generator",
        "batch_reorder": "subject_generator",
        "batch_invariance": "subject_generator",
        "degenerate_rows": "degenerate_rows error",
    },
    # ABI 1.5: hash-keyed noise has no Philox counter for these two to judge.
    "numpy.sort_filter.keyed": {"round_advancement": "request_keyed", "stream_position": "request_keyed"},
}
# The rest of the battery on the slot-keyed sampler; degenerate_rows apart (below): it keeps
# every good row in its slot, so it applies under batch_slot.
SLOT_CHECKS = (
    "support,goodness_of_fit,ties,replay,offset_advancement,per_request_seeds,batch_reorder,"
    "parallel_samples,parameter_routing,tail,batch_invariance,run_to_run"
)


def _verdicts(table):
    return {
        " ".join(line.split()[:2]): line.split()[2]
        for line in table.splitlines()
        if line[:1].strip() and len(line.split()) > 2 and line.split()[1].startswith("[")
    }


@pytest.mark.parametrize("name", sorted(NA_BY_CONTRACT))
def test_declared_contract_passes_with_reasoned_na(run_qualify, name):
    checks = ["--checks", SLOT_CHECKS] if name.endswith("batch_slot") else []
    status, table = run_qualify(
        subject_command(CONTRACT_SUBJECTS, "--subject", name),
        "--budget",
        "quick",
        *checks,
    )
    assert status == 0, table
    verdicts = _verdicts(table)
    for check, reason in NA_BY_CONTRACT[name].items():
        rows = {k: v for k, v in verdicts.items() if k.split()[0] == check}
        assert rows and set(rows.values()) == {"n/a"}, (check, table)
        assert any(
            line.strip().startswith(check) and "[n/a]" in line and reason in line for line in table.splitlines()
        ), (check, table)
    assert verdicts["replay [f32]"] == "pass" and verdicts["goodness_of_fit [f32]"] == "pass", table


def test_degenerate_rows_under_batch_slot(run_checks):
    status, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.batch_slot", "degenerate_rows")
    assert status == 0, table


# ABI 1.5's contracts, each with the defect it exists to catch, planted and killed through the
# protocol by the named check (numpy_samplers.CONTRACT_PLANTED).
KILLED_UNDER_CONTRACT = {
    "numpy.sort_filter.keyed:position_ignored": "offset_advancement",
    "numpy.sort_filter.zero:nan_largest": "degenerate_rows",
    "numpy.sort_filter.zero:nan_filtered": "degenerate_rows",
    "numpy.sort_filter.routed:route_lied": "ties",
}


@pytest.mark.parametrize("name", sorted(KILLED_UNDER_CONTRACT))
def test_contract_mutant_is_killed(require_killed, name):
    require_killed(CONTRACT_SUBJECTS, name, KILLED_UNDER_CONTRACT[name])


def test_position_ignored_is_named_by_position(run_checks):
    # The kill names positions, not Philox offsets: the check is read under the contract.
    _, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.keyed:position_ignored", "offset_advancement", "-v")
    assert "positions" in table and "request_keyed" in table, table


def test_treat_as_zero_passes_degenerate_rows(run_checks):
    status, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.zero", "degenerate_rows", "-v")
    assert status == 0, table
    assert "treat_as_zero" in table, table


def test_treat_as_zero_is_judged_under_top_k_too(run_checks):
    # nan_filtered keeps the rule on unfiltered rows and breaks it only at top_k (the route a
    # sampler such as FlashInfer's cake sampler takes for k <= 1024): the draws at top_k 50 name
    # the row, the setting and the token, and the detail says the unfiltered draws kept it.
    _, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.zero:nan_filtered", "degenerate_rows", "-v")
    failed = [line for line in table.splitlines() if "[FAIL]" in line]
    assert len(failed) == 3, table
    assert all("row 'NaN at token 7' (k=50; degenerate_rows treat_as_zero)" in line for line in failed), table
    assert all("drew token 7" in line and "then top_k 50 keeps 50 tokens" in line for line in failed), table
    kept = "; unfiltered: every degenerate row kept the rule over 256 draws"
    assert all(line.endswith(kept) for line in failed), table
    _, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.zero", "degenerate_rows", "-v")
    assert "and 256 more at top_k 50" in table, table


def test_routed_sampler_is_judged_per_route(run_checks):
    # Rows with k above the fallback threshold take route 1 (keep_ties) and are judged so.
    status, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.routed", "ties,replay")
    assert status == 0, table


def test_route_lied_names_the_route(run_checks):
    _, table = run_checks(CONTRACT_SUBJECTS, "numpy.sort_filter.routed:route_lied", "ties", "-v")
    failed = [line for line in table.splitlines() if "[FAIL]" in line]
    assert failed and all("(route 0 'sort', lowest_index)" in line for line in failed), table


def test_abi_1_5_descriptor_rules_name_the_field():
    from samplecheck_subject.descriptor import DescriptorError, Route, SamplerDescriptor

    def sampler(**fields):
        base = {"name": "x", "input_kind": "probs", "input_dtypes": ["f32"]}
        return SamplerDescriptor(**{**base, **fields})

    with pytest.raises(DescriptorError, match="x: uniform_rule = 'inverse_cdf_u53' is stated on the Philox"):
        sampler(rng_policy="request_keyed", uniform_rule="inverse_cdf_u53").validate()
    with pytest.raises(DescriptorError, match="x: degenerate_rows = 'treat_as_zero' needs input_kind 'probs'"):
        sampler(input_kind="logits", degenerate_rows="treat_as_zero").validate()
    with pytest.raises(DescriptorError, match=r"x: routes state tie policies, .* declare filter top_k"):
        sampler(routes=(Route("a", "keep_ties"),)).validate()
    with pytest.raises(DescriptorError, match=r"x: routes\[1\].name = 'a' must be"):
        sampler(
            filters=["top_k"], tie_policy="keep_ties", routes=(Route("a", "keep_ties"), Route("a", "lowest_index"))
        ).validate()
    with pytest.raises(DescriptorError, match=r"x: routes\[0\].tie_policy = 'highest' is not one of"):
        sampler(filters=["top_k"], tie_policy="keep_ties", routes=(Route("a", "highest"),)).validate()  # type: ignore[arg-type]
    keyed = sampler(rng_policy="request_keyed", degenerate_rows="treat_as_zero").to_json()
    assert keyed["rng_policy"] == "request_keyed" and keyed["degenerate_rows"] == "treat_as_zero"
    assert "routes" not in keyed


def test_unwritten_route_is_a_contract_failure(run_qualify):
    d = {
        "kind": "sampler",
        "name": "test.routes_unwritten",
        "input_kind": "probs",
        "input_dtypes": ["f32"],
        "filters": ["top_k"],
        "tie_policy": "lowest_index",
        "philox_outputs_per_call": 2,
        "routes": [{"name": "sort", "tie_policy": "lowest_index"}],
    }
    status, table = run_qualify(
        subject_command("faulty_subjects:routes_unwritten", "--descriptor", shlex.quote(json.dumps(d))),
        "--budget",
        "quick",
        "--checks",
        "support",
        "-v",
    )
    assert status == 1, table
    assert "never wrote out_route[0] (it declares 1 routes)" in table, table
