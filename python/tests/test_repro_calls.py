"""samplecheck repro-script on parameter_routing and run_to_run records: the failing output's
input row drawn alone under its own parameters (which tells a routing fault from the row's own),
and one batch called as often as the check called it; and a keyed subject's tie group at its
row's requests (docs/repro-format.md, "Standalone scripts"). Each numpy script runs with numpy
alone, reproduces its planted defect, and a correct rule's does not."""

import ast
import copy
import hashlib
import subprocess

import numpy as np

from samplecheck_subject import repro_script as rs
from samplecheck_subject.adapters import common
from test_repro_script import (
    SCRIPT_PYTHON,
    generate,
    generated_and_run,
    planted_record,
    refused,
    script_as,
    write_record,
)

# S09 reads the filter parameters by output row: parameter_routing draws an OUT token.
s09 = planted_record("S09", "parameter_routing")
# X01 draws from a generator of its own that every call moves: the same batch twice differs.
x01 = planted_record("X01", "run_to_run")
# S06 keeps every tie at the k-th while declaring lowest_index: its ties record's row is tied.
s06 = planted_record("S06", "ties")


def test_a_routing_fault_is_not_reproduced_by_its_row_alone(s09, tmp_path):
    """S09's row, drawn alone under its own parameters, never draws OUT: the script says the
    batch's routing is at fault (exit 0), with the check's number of that row's outputs."""
    path, record = s09
    evidence = record["evidence"]
    assert {"token", "input_row", "params", "row_data"} <= set(evidence), evidence
    assert evidence["row_data"]["index"] == evidence["input_row"]
    done = generated_and_run(path, tmp_path / "s09.py")
    assert done.returncode == 0, done.stdout
    assert "NOT REPRODUCED" in done.stdout and "the batch's routing is at fault" in done.stdout
    assert f"{evidence['row_data']['draws']} draws" in done.stdout
    text = (tmp_path / "s09.py").read_text()
    assert "the batch's routing is at fault" in text and "DRAWS = " in text


def test_a_rows_own_parameters_that_draw_out_are_reproduced(s09, tmp_path):
    """The same row and status with its filter switched off in the call (the rule drawing the
    whole row): OUT tokens come back alone, so the script reproduces (exit 1)."""
    _, record = s09
    loose = copy.deepcopy(record)
    loose["subject"] = "numpy.sort_filter"
    loose["evidence"]["params"] = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "temperature": 1.0}
    done = generated_and_run(write_record(tmp_path, loose, "loose.json"), tmp_path / "loose.py")
    assert done.returncode == 1, done.stdout
    assert "REPRODUCED: a token outside the reference's support was drawn" in done.stdout
    assert "not a routing fault" in done.stdout


def test_a_keyed_subjects_routing_output_is_its_one_request(s09, tmp_path):
    """SGLang's seeded function keys its noise by the request: the script draws the failing
    output's own request (the check's seed, subsequence r) once."""
    _, record = s09
    subject = "sglang.top_k_top_p_sampling_from_probs_torch.seeded"
    _, text = script_as(record, subject, "sglang_shipped", tmp_path)
    evidence = record["evidence"]
    assert "DRAWS = 1\n" in text
    assert f"STREAM_SEED = {evidence['seed']!r}" in text
    assert evidence["first_subsequence"] == evidence["subsequence"]
    assert f"FIRST_SUBSEQUENCE = {evidence['subsequence']!r}" in text
    unaddressed = copy.deepcopy(record)
    unaddressed["subject"] = subject
    unaddressed["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects"
    del unaddressed["evidence"]["subsequence"], unaddressed["evidence"]["first_subsequence"]
    refused(write_record(tmp_path, unaddressed, "unaddressed.json"), "evidence.first_subsequence", "output subsequence")


def test_two_calls_of_one_batch_differ(x01, tmp_path):
    """X01's record: the script calls the check's batch (its requests, copies of the row) three
    times (the check's calls) and compares every slot with call 1's; the calls differ, so it reproduces (exit 1)."""
    path, record = x01
    evidence = record["evidence"]
    assert {"batch_size", "slot", "repeat", "expected", "actual", "row_data", "requests_u64"} <= set(evidence)
    done = generated_and_run(path, tmp_path / "x01.py")
    assert done.returncode == 1, done.stdout
    size, slot = evidence["batch_size"], evidence["slot"]
    batch = f"in the check's batch of {size} (its requests, each on a copy of the row)"
    assert f"call 1, {batch} at slot {slot}: token" in done.stdout, done.stdout
    assert f"the check's call 1: {evidence['expected']}" in done.stdout
    assert f"the check's call {evidence['repeat']}: {evidence['actual']}" in done.stdout
    assert "call 3: token" in done.stdout and f" of {size} slots differ from call 1 (first at slot" in done.stdout
    assert "REPRODUCED: calls [2, 3] of one batch differ from call 1 (2 of 2 calls)" in done.stdout


def test_a_deterministic_rule_gives_one_token_per_call(x01, tmp_path):
    _, record = x01
    passing = dict(record, subject="numpy.sort_filter")
    out = tmp_path / "correct.py"
    made = generate(write_record(tmp_path, passing), out)
    assert made.returncode == 0, made.stderr
    command = [SCRIPT_PYTHON, str(out), "--calls", "4"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd="/")
    print(done.stdout)
    assert done.returncode == 0, done.stdout
    assert f"0 of {record['evidence']['batch_size']} slots differ from call 1" in done.stdout
    assert "NOT REPRODUCED: 4 calls of one batch" in done.stdout


def test_cakes_run_to_run_script_seeds_its_calls_as_the_adapter_does(x01, tmp_path):
    """FlashInfer's cake (CI has no torch: the script is generated, not run): it calls the batch
    as the adapter calls one of its requests, each call's philox_seed from the adapter's own
    call_seed, whose inlined copy gives the adapter's value."""
    _, record = x01
    _, text = script_as(record, "flashinfer.cake.top_k_top_p_sampling_from_probs", "flashinfer_cake", tmp_path)
    assert "def draw_requests(row, params, requests, device):" in text
    assert "cake_calls(row, params, len(requests), call_seed(seed, subsequence, offset, None), device)" in text
    placement = (record["evidence"]["batch_size"], record["evidence"]["slot"], "recorded")
    assert f"PLACEMENTS = {[placement] * record['evidence']['repeat']!r}" in text
    tree = ast.parse(text)
    source = next(ast.get_source_segment(text, f) for f in tree.body if getattr(f, "name", "") == "call_seed")
    inlined: dict = {"np": np, "hashlib": hashlib}
    exec(source, inlined)  # the script's own definition, alone
    words = [np.arange(5, dtype=np.uint64) + i for i in range(3)]
    assert inlined["call_seed"](*words, None) == common.call_seed(*words, None)


def test_a_keyed_subjects_tie_group_is_scripted_at_its_rows_requests(s06, tmp_path):
    """A tie group's record whose row drew only its own requests (first_subsequence, ties'
    C++ record: battery_repro_evidence_test) is scripted for a subject keyed by its request
    at those requests; one without it (a routed row's bucket) is refused."""
    _, record = s06
    group = copy.deepcopy(record)
    evidence = group["evidence"]
    del evidence["token"]  # S06 fails ties by an OUT token: its row as a tie group's instead
    values = np.frombuffer(rs.decode(group, "values_f32"), "<f4")
    status = evidence["row_data"]["status"]
    tied = [t for t in range(values.size) if status[t] == "I" and np.count_nonzero(values == values[t]) > 1]
    members = [t for t in tied if values[t] == values[tied[0]]]
    evidence.update(tie_group={"first": tied[0], "size": len(members)}, group_size=len(members))
    evidence["first_subsequence"] = 123_456
    _, text = script_as(group, "sglang.top_k_top_p_sampling_from_probs_torch.seeded", "sglang_shipped", tmp_path)
    assert f"STREAM_SEED = {evidence['check_seed']!r}" in text
    assert "FIRST_SUBSEQUENCE = 123456" in text and "VERDICT = 'ties'" in text
    assert f"GROUP_FIRST = {tied[0]}" in text
    del evidence["first_subsequence"]
    group.update(subject="sglang.top_k_top_p_sampling_from_probs_torch.seeded")
    group["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.sglang_shipped:subjects"
    refused(write_record(tmp_path, group, "routed.json"), "evidence.first_subsequence", "several routes")


def test_a_record_is_addressed_by_its_first_subsequence(s06, tmp_path):
    """A keyed subject's script draws from the record's first_subsequence, whatever
    draws_per_row and the row's index would give (the C++ check's record says it: S06's ties
    OUT token, a tied row after the first)."""
    _, record = s06
    evidence = record["evidence"]
    index, per_row = evidence["row_data"]["index"], evidence["draws_per_row"]
    assert evidence["first_subsequence"] == sum(per_row[:index]) > 0
    assert rs.addressing(record) == (evidence["check_seed"], evidence["first_subsequence"])
    moved = copy.deepcopy(record)
    moved["evidence"]["first_subsequence"] = 123_456
    _, text = script_as(moved, "sglang.top_k_top_p_sampling_from_probs_torch.seeded", "sglang_shipped", tmp_path)
    assert "FIRST_SUBSEQUENCE = 123456" in text
    for bad in (-1, 1 << 64, True, 1.5, "7"):  # not a 64-bit word: no address, no fallback
        moved["evidence"]["first_subsequence"] = bad
        assert rs.addressing(moved) == (None, None), bad


def test_an_older_record_is_addressed_as_before(s06, s09):
    """A record written before the checks kept first_subsequence (version 1 still) is addressed
    as those records allow: draws_per_row before the row's index (support, goodness_of_fit, tail,
    a ties OUT token), parameter_routing's output subsequence; a tie group's row not at all."""
    for _, record in (s06, s09):  # without it, today's records read as they do with it
        old = copy.deepcopy(record)
        evidence = old["evidence"]
        first = evidence.pop("first_subsequence")
        assert rs.addressing(old) == (evidence.get("seed", evidence["check_seed"]), first)
    old = copy.deepcopy(s06[1])
    del old["evidence"]["first_subsequence"]
    for check in ("support", "goodness_of_fit", "tail"):
        index, per_row = old["evidence"]["row_data"]["index"], old["evidence"]["draws_per_row"]
        assert rs.addressing(dict(old, check=check)) == (old["evidence"]["check_seed"], sum(per_row[:index]))
    del old["evidence"]["token"]  # a tie group's record: first_subsequence was its only address
    assert rs.addressing(old) == (None, None)
    assert rs.addressing(dict(old, check="degenerate_rows")) == (None, None)
