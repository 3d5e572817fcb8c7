"""The pytest integration: a framework's test calls the `qualify` fixture; a correct
subject's test passes, a defective one's fails with samplecheck's table."""

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

from conftest import HERE, PACKAGE_ROOT

CASES = os.path.join(HERE, "plugin_cases", "test_plugin_cases.py")


def plugin_entry_point_seen():
    return any(ep.value == "samplecheck_subject.pytest_plugin"
               for ep in entry_points(group="pytest11"))


def test_fixture_passes_the_correct_and_fails_the_defective(samplecheck_bin, tmp_path):
    report = tmp_path / "report.xml"
    env = dict(os.environ, SAMPLECHECK_BIN=samplecheck_bin,
               PYTHONPATH=os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")]))
    # -p loads the plugin as its pytest11 entry point does once the package is installed;
    # where the entry point is already seen (installed, or the metadata `pip install ./python`
    # leaves in the checkout), pytest loads it itself and a -p would register it twice.
    load = [] if plugin_entry_point_seen() else ["-p", "samplecheck_subject.pytest_plugin"]
    done = subprocess.run([sys.executable, "-m", "pytest", *load, "-q",
                           "-p", "no:cacheprovider", f"--junitxml={report}", CASES, "--rootdir", str(tmp_path)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    print(done.stdout)
    assert done.returncode == 1, done.stdout  # pytest: some test failed
    cases = {c.get("name"): c for c in ET.parse(report).getroot().iter("testcase")}
    assert set(cases) == {"test_correct_sampler_qualifies", "test_seed_element_zero_sampler_qualifies"}
    assert cases["test_correct_sampler_qualifies"].find("failure") is None
    failure = cases["test_seed_element_zero_sampler_qualifies"].find("failure")
    assert failure is not None
    text = (failure.get("message") or "") + (failure.text or "")
    assert "samplecheck qualify failed for case.seed_element_zero" in text
    assert "per_request_seeds" in text and "FAIL" in text  # the battery's table


def test_entry_point_is_declared():
    import tomllib

    with open(os.path.join(PACKAGE_ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["entry-points"]["pytest11"] == {"samplecheck": "samplecheck_subject.pytest_plugin"}
