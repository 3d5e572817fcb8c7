"""samplecheck repro-script on the checks that compare one request's two tokens
(batch_invariance, batch_reorder, per_request_seeds): the script calls the rule on the request
in the placements its check compared, a correct rule keeps the token in every placement, the
H200 loop retries every batch size, and vLLM's seeded subjects are scripted per request
(docs/repro-format.md, "Standalone scripts")."""

import base64
import copy
import json
import subprocess

import pytest

from conftest import qualify, subject_command
from test_repro_script import (
    NUMPY,
    SCRIPT_PYTHON,
    generate,
    generated_and_run,
    h200_loop,
    refused,
    run_script,
    script_as,
    without_row,
    write_record,
)

REQUEST_CHECKS = ("batch_invariance", "batch_reorder", "per_request_seeds")


@pytest.fixture(scope="module")
def s04(samplecheck_bin, tmp_path_factory):
    """S04 (the stream keyed by the batch slot) fails the three checks of one request's two
    tokens: alone and in a batch, at two positions, in two slots of a batch all of it."""
    folder = tmp_path_factory.mktemp("repro-S04")
    status, table = qualify(
        samplecheck_bin,
        subject_command(NUMPY, "--subject", "numpy.sort_filter:S04"),
        *("--budget", "quick", "--checks", ",".join(REQUEST_CHECKS), "--repro-dir", str(folder)),
    )
    assert status == 1, table
    records = {}
    for check in REQUEST_CHECKS:
        path = folder / f"numpy.sort_filter_S04.{check}.f32.json"
        records[check] = (path, json.loads(path.read_text()))
    return records


@pytest.mark.parametrize("check", REQUEST_CHECKS)
def test_a_requests_two_tokens_reproduce_as_the_check_saw_them(s04, tmp_path, check):
    """The script calls the rule on the request in the placements its check compared, keyed
    as the adapter keys it: each token it prints is the check's."""
    path, record = s04[check]
    done = generated_and_run(path, tmp_path / "s04.py")
    assert done.returncode == 1, done.stdout
    evidence = record["evidence"]
    tokens = [evidence["expected"], evidence["actual"]] if check == "batch_invariance" else evidence["tokens"]
    for token in tokens:
        shown = token if isinstance(token, str) else f"token {token}"
        assert f": {shown}; the check's: {shown}" in done.stdout, done.stdout
    assert "REPRODUCED: the request drew token" in done.stdout


@pytest.mark.parametrize("check", REQUEST_CHECKS)
def test_a_correct_rule_keeps_the_requests_token(s04, tmp_path, check):
    _, record = s04[check]
    passing = dict(record, subject="numpy.sort_filter")  # the same request and row, the correct rule
    out = tmp_path / "correct.py"
    made = generate(write_record(tmp_path, passing), out)
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [SCRIPT_PYTHON, str(out), "--sizes", "all"], capture_output=True, text=True, timeout=300, cwd="/"
    )
    print(done.stdout)
    assert done.returncode == 0, done.stdout
    tried = len(record["evidence"]["batch_sizes"]) if check == "batch_invariance" else 2
    assert "NOT REPRODUCED: the request drew token" in done.stdout, done.stdout
    assert f"in all {tried} placements tried" in done.stdout, done.stdout


def test_h200_loop_tries_every_batch_size_where_the_recorded_ones_agree(s04, samplecheck_bin, tmp_path):
    """tools/scripts/h200_repro_scripts.sh: a batch_invariance script that does not reproduce in
    the recorded placements runs again with --sizes all, on a summary line of its own."""
    _, record = s04["batch_invariance"]
    (tmp_path / "repro").mkdir()
    write_record(tmp_path / "repro", dict(record, subject="numpy.sort_filter"), "correct.batch_invariance.f32.json")
    summary = h200_loop(tmp_path, samplecheck_bin)
    recorded = "| correct.batch_invariance.f32 | 0 | NOT REPRODUCED: the request drew token"
    assert recorded in summary and "--sizes all tries every batch size it ran" in summary, summary
    tried = len(record["evidence"]["batch_sizes"])
    assert "| correct.batch_invariance.f32 --sizes all | 0 | NOT REPRODUCED" in summary, summary
    again = (tmp_path / "repro_scripts" / "correct.batch_invariance.f32.all.txt").read_text()
    assert f"in all {tried} placements tried" in again, again


def test_vllm_batch_script_calls_the_shipped_function_per_request(s04, tmp_path):
    """vLLM's seeded subjects script batch_invariance: one torch.Generator per request, seeded
    as the adapter seeds it, the batch split into calls as the adapter splits it; a subject
    with no batch call, or a record without the request's row, is refused."""
    _, record = s04["batch_invariance"]
    out, text = script_as(record, "vllm.forward_native", "vllm_shipped", tmp_path)
    for call in ("def draw_requests(", "request_generator(*r, device)", "sampler().forward_native(x, g, k, p)[0]"):
        assert call in text, call
    words = (record["evidence"][w] for w in ("seed", "subsequence", "offset"))
    assert f"REQUEST = {tuple(words)!r}" in text
    done = run_script(out)
    assert done.returncode == 2 and "cannot import the subject's package" in done.stdout, done.stdout
    unseeded = dict(record, subject="vllm.forward_native.unseeded")
    unseeded["exec"] = "python3 -m samplecheck_subject.run samplecheck_subject.adapters.vllm_shipped:subjects"
    refused(write_record(tmp_path, unseeded, "unseeded.json"), "subject", "declares no batch call")
    old = write_record(tmp_path, without_row(record), "old.json")
    refused(old, "evidence.row_data", "before records kept the request's row")
    bad_slot = copy.deepcopy(record)
    bad_slot["evidence"]["slot"] = bad_slot["evidence"]["batch_size"]
    refused(write_record(tmp_path, bad_slot, "slot.json"), "evidence.slot", "outside")


@pytest.fixture(scope="module")
def s03(samplecheck_bin, tmp_path_factory):
    """S03 (seed and offset read at element 0 for every request): a request's token in a batch
    follows its first batchmate's key, so only the check's own batch gives the check's token."""
    folder = tmp_path_factory.mktemp("repro-S03")
    status, table = qualify(
        samplecheck_bin,
        subject_command(NUMPY, "--subject", "numpy.sort_filter:S03"),
        *("--budget", "quick", "--checks", "batch_invariance", "--repro-dir", str(folder)),
    )
    assert status == 1, table
    path = folder / "numpy.sort_filter_S03.batch_invariance.f32.json"
    return path, json.loads(path.read_text())


def test_the_checks_batch_gives_the_checks_token(s03, tmp_path):
    """With the batch's requests (evidence.requests_u64) the script draws the check's token in
    the check's batch; from a record without them (batchmates keyed by the script), another."""
    path, record = s03
    evidence = record["evidence"]
    done = generated_and_run(path, tmp_path / "s03.py")
    assert done.returncode == 1, done.stdout
    batch = f"in the check's batch of {evidence['batch_size']} (its requests, each on a copy of the row)"
    assert f"{batch} at slot {evidence['slot']}: {evidence['actual']}; the check's: {evidence['actual']}" in done.stdout
    older = copy.deepcopy(record)
    del older["evidence"]["requests_u64"]
    again = generated_and_run(write_record(tmp_path, older, "older.json"), tmp_path / "older.py")
    assert again.returncode == 1, again.stdout
    own = f"in a batch of {evidence['batch_size']} at slot {evidence['slot']}: "
    line = next(x for x in again.stdout.splitlines() if x.startswith(own))
    assert not line.startswith(f"{own}{evidence['actual']};"), line


def test_a_batch_that_does_not_hold_the_request_is_refused(s03, tmp_path):
    _, record = s03
    words = base64.b64decode(record["evidence"]["requests_u64"])
    short = copy.deepcopy(record)
    short["evidence"]["requests_u64"] = base64.b64encode(words[:-24]).decode()
    refused(write_record(tmp_path, short, "short.json"), "evidence.requests_u64", "requests of 3 words")
    moved = copy.deepcopy(record)
    slot = record["evidence"]["slot"]
    other = words[: 24 * slot] + bytes(24) + words[24 * (slot + 1) :]
    moved["evidence"]["requests_u64"] = base64.b64encode(other).decode()
    moved_path = write_record(tmp_path, moved, "moved.json")
    refused(moved_path, "evidence.requests_u64", f"slot {slot} holds", "not the request")
    garbled = copy.deepcopy(record)
    garbled["evidence"]["requests_u64"] = "not base64!"
    refused(write_record(tmp_path, garbled, "garbled.json"), "evidence.requests_u64", "not base64")
