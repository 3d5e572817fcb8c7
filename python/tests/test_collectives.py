"""Python all-reduces judged by samplecheck through `qualify --exec` (needs $SAMPLECHECK_BIN):
the collective request of the subject protocol, its descriptor's declared invariants, the
mutant killed by the check its planted defect breaks, and a collective that raises, exits,
hangs, returns too few elements, gives ranks other bits or leaves an element unwritten on its
first request: that check fails and the battery goes on."""

import json
import os
import shlex

import numpy as np
import pytest

from conftest import HERE, PLUGIN_ARGS, subject_command
from faulty_subjects import COLLECTIVE_FAULTS, PROCESS_FAULT_TEXT
from installed.inner_pytest import run_pytest
from protocol_host import Host, python_subject
from samplecheck_subject import CollectiveDescriptor, DescriptorError
from samplecheck_subject.descriptor import from_json
from samplecheck_subject.numpy_collectives import RING, ring_first_ranks, tree_order

SUBJECTS = "samplecheck_subject.numpy_collectives:subjects"


def rows(table, check):
    return [line for line in table.splitlines() if line.startswith(check)]


def test_fixed_order_passes_message_invariance_and_run_to_run(run_checks):
    status, table = run_checks(SUBJECTS, "numpy.allreduce.fixed_order", "message_invariance,run_to_run")
    assert status == 0, table
    for check in ("message_invariance", "run_to_run"):
        assert rows(table, check) and all(" pass " in f" {line} " for line in rows(table, check)), table


def test_ring_declaring_run_invariance_only_passes(run_qualify):
    status, table = run_qualify(subject_command(SUBJECTS, "--subject", "numpy.allreduce.ring"), "--budget", "quick")
    assert status == 0, table
    assert all(" pass " in f" {line} " for line in rows(table, "run_to_run")), table
    assert all(" n/a " in f" {line} " for line in rows(table, "message_invariance")), table


def test_ring_declaring_size_invariance_fails_message_invariance(run_qualify):
    # The same ring callable, its descriptor claiming what a ring cannot keep.
    claims = dict(RING.to_json(), name="numpy.allreduce.ring:claims_size", invariants=["size", "run"])
    ring = "samplecheck_subject.numpy_collectives:ring"
    command = subject_command(ring, "--descriptor", shlex.quote(json.dumps(claims)))
    status, table = run_qualify(command, "--budget", "quick", "--checks", "message_invariance")
    assert status == 1, table
    assert any(" FAIL " in f" {line} " for line in rows(table, "message_invariance")), table
    assert "probe element" in table, table


def test_the_size_switch_mutant_is_killed_by_message_invariance(require_killed):
    require_killed(SUBJECTS, "numpy.allreduce.fixed_order:size_switch", "message_invariance")


def test_ring_chunks_follow_the_message_size():
    # One loop of 3 chunks of ceil(10 / 3) elements; and a long message's loops of full chunks.
    assert ring_first_ranks(10, 3).tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    first = ring_first_ranks(3 * 32768 + 5, 3)
    assert first[32768 - 1] == 0 and first[32768] == 1 and first[3 * 32768] == 0


def test_tree_order_splits_at_the_largest_power_of_two():
    x = np.array([[1e8], [1.0], [-1e8], [1.0]], dtype=np.float32)
    # ((r0 + r1) + (r2 + r3)) = (1e8 + -1e8) = 0; rank order gives 1.
    assert tree_order(x).tolist() == [0.0]


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"max_world_size": 0}, "max_world_size"),
        ({"invariants": ["size", "sized"]}, "invariants"),
        ({"invariants": ["run", "run"]}, "invariants"),
        ({"dtypes": ["bf16"]}, "dtypes"),
        ({"memory_space": "cuda"}, "memory_space"),
        ({"reduce_op": "max"}, "reduce_op"),
    ],
)
def test_a_bad_collective_descriptor_is_refused_naming_the_field(fields, named):
    entry = dict(CollectiveDescriptor(name="t.c", max_world_size=4).to_json(), **fields)
    with pytest.raises(DescriptorError, match=named):
        from_json(entry)


def collective(h, world, count, /, inputs=None, **override):
    """One collective request to numpy.allreduce.fixed_order; `override` replaces fields."""
    rng = np.random.default_rng(7)
    if inputs is None:
        inputs = rng.standard_normal((world, count)).astype(np.float32)
    named = {f"in{r}": inputs[r] for r in range(world)}
    named.update({f"out{r}": np.zeros(count, np.float32) for r in range(world)})
    specs = h.place(named)
    request = {
        "type": "collective",
        "id": h.next_id,
        "subject": "numpy.allreduce.fixed_order",
        "shm_size": h.shm_size,
        "world_size": world,
        "count": count,
        "dtype": "f32",
        "arrays": {
            "inputs": [specs[f"in{r}"] for r in range(world)],
            "outputs": [specs[f"out{r}"] for r in range(world)],
        },
    }
    request.update(override)
    h.send(request)
    h.next_id += 1
    return h.receive(), inputs, [h.array(specs[f"out{r}"], np.float32) for r in range(world)]


def test_the_python_server_answers_a_collective_request_and_names_bad_fields():
    h = Host(python_subject(SUBJECTS, "--subject", "numpy.allreduce.fixed_order"))
    entry = h.hello["subjects"][0]
    assert entry["kind"] == "collective" and entry["invariants"] == ["size", "run"]
    reply, inputs, outputs = collective(h, 3, 100)
    assert reply["status"] == 0, reply
    expected = (inputs[0] + inputs[1]) + inputs[2]
    assert all(out.tobytes() == expected.tobytes() for out in outputs)
    reply, _, _ = collective(h, 2, 4, world_size=65)
    assert reply["status"] == 1 and "field world_size is 65" in reply["message"], reply
    assert h.close() == 0
    for override, named in [
        ({"count": 0}, "count = 0"),
        ({"dtype": "bf16"}, "dtype = 'bf16'"),
        ({"arrays": {"inputs": [], "outputs": []}}, "arrays.inputs is not a list of world_size = 2"),
    ]:
        h = Host(python_subject(SUBJECTS, "--subject", "numpy.allreduce.fixed_order"))
        reply, _, _ = collective(h, 2, 4, **override)
        assert reply["type"] == "error" and named in reply["message"], reply
        h.close()


COLLECTIVE_FAULT_TEXT = {
    **PROCESS_FAULT_TEXT,
    "short": "the callable returned 63 rank 0 outputs for 64 outputs",
    "disagree": "the ranks disagree: element 0 of rank 1",
    "unwritten": "outputs[0] element 63 was left unwritten",
}


@pytest.mark.parametrize("fault", COLLECTIVE_FAULTS)
def test_a_faulty_collective_fails_one_check_and_the_battery_continues(run_qualify, tmp_path, fault):
    env = {"SAMPLECHECK_TEST_FAULT": fault, "SAMPLECHECK_TEST_FAULT_STATE": str(tmp_path / "requests")}
    command = subject_command("faulty_subjects:collective_subjects")
    status, table = run_qualify(command, "--budget", "quick", "--timeout", "5", env=env, timeout=300)
    assert status == 1, table
    rows = [line.split() for line in table.splitlines() if line[:1].strip()]
    verdicts = {row[0]: row[1] for row in rows if row[0] in ("message_invariance", "run_to_run")}
    assert verdicts["message_invariance"] in ("FAIL", "TIMEOUT"), table  # the first request met the fault
    assert verdicts["run_to_run"] == "pass", table  # a fresh process judged the next check
    assert COLLECTIVE_FAULT_TEXT[fault] in table, table


def test_the_pytest_plugin_gives_a_collective_one_item_per_check(samplecheck_bin, tmp_path):
    case = os.path.join(HERE, "plugin_cases", "test_collective_cases.py")
    env = dict(os.environ, SAMPLECHECK_BIN=samplecheck_bin)
    args = ("-rA", "--rootdir", str(tmp_path), "--basetemp", str(tmp_path / "tmp"))
    done = run_pytest(*PLUGIN_ARGS, *args, "-o", f"cache_dir={tmp_path / 'cache'}", case, cwd=tmp_path, env=env)
    assert done.returncode == 1, done.stdout
    for item in ("test_fixed_order[message_invariance]", "test_fixed_order[run_to_run]"):
        assert f"PASSED ::{item}" in done.stdout, done.stdout
    assert "SKIPPED" in done.stdout and "tp_invariance n/a" in done.stdout, done.stdout
    assert "FAILED ::test_size_switch[message_invariance]" in done.stdout, done.stdout
    assert "message_invariance FAIL: world_size 4, count 2048" in done.stdout, done.stdout
