"""A pytest started by a test, as a user starts one: `python -m pytest ARGS` with this
interpreter, its output printed (pytest shows it under a failed test). Here, beside
test_installed.py, because that test runs without python/tests/conftest.py; the tests of
python/tests import it as installed.inner_pytest. It imports nothing of the package."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping


def run_pytest(*args: str, cwd: str | os.PathLike[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Runs pytest with `args` in `cwd` (stdout and stderr together); a ten-minute limit."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    print(done.stdout)
    return done
