"""CI, after the wheel is installed into a fresh virtual environment: the package imported is
the installed one, not the checkout's; its pytest plugin judges with the samplecheck installed
beside it; and a pytest of a passing and a failing numpy subject (plugin_cases) gives one item
per check, the failing one with its detail line, replay command and record.

Run with `--confcutdir python/tests/installed` and no PYTHONPATH, so that nothing of the
checkout's tests (python/tests/conftest.py, the PYTHONPATH ctest sets) is used."""

import json
import os
import subprocess
import sysconfig
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

from inner_pytest import run_pytest

import samplecheck_subject
from samplecheck_subject.judge import find_judge

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parents[2]
CASES = HERE.parent / "plugin_cases"


def test_package_and_judge_are_the_installed_ones():
    assert CHECKOUT not in Path(samplecheck_subject.__file__).resolve().parents
    assert metadata.version("samplecheck") == samplecheck_subject.__version__
    judge = find_judge()
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    assert judge.source == "bundled" and Path(judge.path).parent == scripts, judge
    assert os.access(scripts / "samplecheck-subject-host", os.X_OK)
    version = subprocess.run([judge.path, "--version"], stdout=subprocess.PIPE, text=True, check=False)
    assert version.stdout.split()[:2] == ["samplecheck", samplecheck_subject.__version__], version.stdout


def test_pytest_judges_a_passing_and_a_failing_subject(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SAMPLECHECK_BIN", "PYTHONPATH")}
    junit = tmp_path / "junit.xml"
    done = run_pytest(
        "-p",
        "no:cacheprovider",
        "--confcutdir",
        str(CASES),
        "--rootdir",
        str(tmp_path),
        "--basetemp",
        str(tmp_path / "tmp"),
        f"--junitxml={junit}",
        "-k",
        "correct or seed_element_zero",
        str(CASES / "test_plugin_cases.py"),
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1, done.stdout
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    failed = {name for name, c in cases.items() if c.find("failure") is not None}
    assert set(cases) == {
        "test_correct[support]",
        "test_correct[per_request_seeds]",
        "test_seed_element_zero[support]",
        "test_seed_element_zero[per_request_seeds]",
    }
    assert failed == {"test_seed_element_zero[per_request_seeds]"}, done.stdout
    failure = cases["test_seed_element_zero[per_request_seeds]"].find("failure")
    text = (failure.get("message") or "") + "\n" + (failure.text or "")
    assert "per_request_seeds [f32] FAIL" in text and "replay: " in text
    records = [line.split("record: ", 1)[1] for line in text.splitlines() if "record: " in line]
    assert records and all(Path(r).is_file() and tmp_path in Path(r).parents for r in records)
    # The installed samplecheck starts the installed generator (the python3 beside it): the
    # record of a collision test's failure keeps its requests, but a pytest case is a function
    # of the test's own, which no adapter module declares a call for: refused by it, exit 2
    # naming the field.
    scripted = subprocess.run(
        [find_judge().path, "repro-script", records[0], "-o", str(tmp_path / "s03.py")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    assert scripted.returncode == 2 and "field 'subject'" in scripted.stdout, scripted.stdout
    assert "no adapter module" in scripted.stdout, scripted.stdout
    record = json.loads(Path(records[0]).read_text())
    assert record["evidence"]["calls"] == [2 * record["evidence"]["pairs"]], record["evidence"]
