"""The pytest plugin as its users meet it: plugin_cases/test_plugin_cases.py run in pytests of
their own (the source tree's package, $SAMPLECHECK_BIN's samplecheck). One item per check;
a failed item says the check's detail, a replay command that replays it, and its record under
pytest's temporary directory; --lf and -k narrow what samplecheck runs; a subject whose device
is absent is skipped with one reason, failed with --require-device (with a samplecheck built
with CUDA: one without refuses a "cuda" subject, and says why)."""

import json
import os
import platform
import shlex
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from conftest import HERE, PACKAGE_ROOT, PLUGIN_ARGS
from installed.inner_pytest import run_pytest

CASES = os.path.join(HERE, "plugin_cases", "test_plugin_cases.py")
DEVICE_CASES = os.path.join(HERE, "plugin_cases", "test_device_cases.py")


def judge_has_cuda(samplecheck_bin):
    """A samplecheck built with CUDA lists its CUDA subjects; one without refuses a "cuda"
    subject outright (exit 2), whether or not the device is there."""
    listed = subprocess.run([samplecheck_bin, "qualify", "--list"], stdout=subprocess.PIPE, text=True, check=False)
    return any(line.strip().startswith("cuda.") for line in listed.stdout.splitlines())


def inner_pytest(samplecheck_bin, work, *args):
    """Runs the cases; returns (exit status, output, {test id: (outcome, message)}, its basetemp)."""
    run = len(list(work.glob("junit*")))
    junit, basetemp = work / f"junit{run}.xml", work / f"tmp{run}"
    env = dict(os.environ, SAMPLECHECK_BIN=samplecheck_bin)
    done = run_pytest(
        *PLUGIN_ARGS,
        "-rs",
        f"--junitxml={junit}",
        "--rootdir",
        str(work),
        "--basetemp",
        str(basetemp),
        "-o",
        f"cache_dir={work / 'cache'}",
        *args,
        cwd=work,
        env=env,
    )
    outcomes = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        found = [(kind, c) for kind in ("failure", "error", "skipped") for c in case.findall(kind)]
        kind, element = found[0] if found else ("passed", None)
        message = "" if element is None else (element.get("message") or "") + "\n" + (element.text or "")
        outcomes[case.get("name")] = (kind, message)
    return done.returncode, done.stdout, outcomes, basetemp


@pytest.fixture(scope="module")
def first_run(samplecheck_bin, tmp_path_factory):
    work = tmp_path_factory.mktemp("plugin")
    return work, inner_pytest(samplecheck_bin, work, CASES)


def test_one_item_per_check_and_the_defective_check_fails_with_its_replay(first_run):
    _, (status, output, outcomes, basetemp) = first_run
    assert status == 1, output  # some item failed
    assert set(outcomes) == {
        "test_correct[support]",
        "test_correct[per_request_seeds]",
        "test_seed_element_zero[support]",
        "test_seed_element_zero[per_request_seeds]",
        "test_bound_method[support]",
    }
    failed = [name for name, (kind, _) in outcomes.items() if kind == "failure"]
    assert failed == ["test_seed_element_zero[per_request_seeds]"], output
    message = outcomes["test_seed_element_zero[per_request_seeds]"][1]
    assert "per_request_seeds [f32] FAIL: seeds [a, b, ...]" in message and "equal pairs" in message
    records = [line.split("record: ", 1)[1] for line in message.splitlines() if "record: " in line]
    assert records and all(os.path.isfile(r) and r.startswith(str(basetemp)) for r in records)
    assert "replay: " in message and "--samplecheck-replay" in message


def test_device_absent_is_skipped_and_said_once(samplecheck_bin, tmp_path):
    if not judge_has_cuda(samplecheck_bin):
        pytest.skip("this samplecheck has no CUDA: test_cpu_judge_refuses_a_cuda_subject_saying_so")
    status, output, outcomes, _ = inner_pytest(samplecheck_bin, tmp_path, DEVICE_CASES)
    assert status == 0, output
    assert [kind for kind, _ in outcomes.values()] == ["skipped", "skipped"], output
    said = [line for line in output.splitlines() if "device absent" in line]
    assert len(said) == 1 and said[0].startswith("SKIPPED [2] "), output


def test_replay_command_replays_the_failed_check(samplecheck_bin, first_run):
    work, (_, _, outcomes, _) = first_run
    message = outcomes["test_seed_element_zero[per_request_seeds]"][1]
    replay = next(line.split("replay: ", 1)[1] for line in message.splitlines() if "replay: " in line)
    argv = shlex.split(replay.split(" && ")[-1])
    assert argv[0] == "pytest" and argv[2] == "--samplecheck-replay"
    status, output, again, _ = inner_pytest(samplecheck_bin, work, *argv[1:])
    assert status == 1 and list(again) == ["test_seed_element_zero[per_request_seeds]"], output
    assert "REPRODUCED" in again["test_seed_element_zero[per_request_seeds]"][1]


def test_last_failed_runs_only_that_check_and_the_report_names_the_python(samplecheck_bin, first_run):
    work, _ = first_run
    status, output, outcomes, basetemp = inner_pytest(samplecheck_bin, work, CASES, "--lf")
    assert status == 1 and list(outcomes) == ["test_seed_element_zero[per_request_seeds]"], output
    reports = list(basetemp.glob("samplecheck-case.seed_element_zero[0-9]*/report/report.json"))
    assert len(reports) == 1, output
    runs = json.loads(reports[0].read_text())["runs"]
    assert {c["check"] for run in runs for c in run["checks"]} == {"per_request_seeds"}
    # The hello's environment, as samplecheck recorded it.
    assert runs[0]["environment"]["python"] == platform.python_version()
    assert runs[0]["environment"]["packages"]["numpy"] == np.__version__


def test_require_device_fails_a_subject_whose_device_is_absent(samplecheck_bin, tmp_path):
    if not judge_has_cuda(samplecheck_bin):
        pytest.skip("this samplecheck has no CUDA: test_cpu_judge_refuses_a_cuda_subject_saying_so")
    status, output, outcomes, _ = inner_pytest(samplecheck_bin, tmp_path, DEVICE_CASES, "--require-device")
    assert status == 1, output
    assert {kind for kind, _ in outcomes.values()} == {"failure"} and len(outcomes) == 2
    assert all("device absent" in message for _, message in outcomes.values())


def test_cpu_judge_refuses_a_cuda_subject_saying_so(samplecheck_bin, tmp_path):
    if judge_has_cuda(samplecheck_bin):
        pytest.skip("this samplecheck has CUDA: test_device_absent_is_skipped_and_said_once")
    status, output, outcomes, _ = inner_pytest(samplecheck_bin, tmp_path, DEVICE_CASES)
    assert status == 1 and len(outcomes) == 2, output
    assert all(kind == "failure" and "built without CUDA" in message for kind, message in outcomes.values())


def test_entry_point_is_declared():
    import tomllib

    with open(os.path.join(os.path.dirname(PACKAGE_ROOT), "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"samplecheck": "samplecheck_subject.pytest_plugin"}
