"""docs/python.md's worked example is examples/python/ as it is, and its test passes the quick
battery: no n/a check fails, none errors, every check of the battery is an item."""

import os
import re
import xml.etree.ElementTree as ET

from conftest import PACKAGE_ROOT, PLUGIN_ARGS
from installed.inner_pytest import run_pytest

ROOT = os.path.dirname(PACKAGE_ROOT)
EXAMPLE = os.path.join(ROOT, "examples", "python")


def shown_files():
    """{path: text} of each ```python block on the page whose first line names its file."""
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        page = f.read()
    blocks = re.findall(r"```python\n# (examples/python/\S+)\n(.*?)```", page, re.DOTALL)
    return dict(blocks)


def test_the_page_shows_the_example_files_as_they_are():
    shown = shown_files()
    assert set(shown) == {"examples/python/topk_topp.py", "examples/python/test_topk_topp.py"}
    for path, text in shown.items():
        with open(os.path.join(ROOT, path)) as f:
            assert f.read() == text, f"docs/python.md shows another {path}"


def test_the_example_passes_the_quick_battery(samplecheck_bin, tmp_path):
    junit = tmp_path / "junit.xml"
    env = dict(os.environ, SAMPLECHECK_BIN=samplecheck_bin)
    done = run_pytest(
        *PLUGIN_ARGS,
        "-p",
        "no:cacheprovider",
        "-rs",
        "--basetemp",
        str(tmp_path / "tmp"),
        f"--junitxml={junit}",
        EXAMPLE,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    passed = [c for c in cases if not list(c)]
    skipped = [c.find("skipped").get("message") for c in cases if c.find("skipped") is not None]
    assert len(cases) == len(passed) + len(skipped) and len(passed) >= 10
    assert all(" n/a: " in message for message in skipped), skipped
