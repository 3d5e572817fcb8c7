import functools
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

# plugin_cases: run by test_pytest_plugin.py in pytests of their own that load the plugin;
# installed: run by CI against the installed wheel (.ci/run), without this conftest.
collect_ignore = ["plugin_cases", "installed"]

# The package and the modules here (subjects the tests serve) are imported through the
# environment, as an installed package is: ctest puts python/ and python/tests/ on PYTHONPATH
# (python/CMakeLists.txt), and every process a test starts inherits it.
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)


# The options that load the pytest plugin in a pytest started by a test: none where the
# package's pytest11 entry point is seen (installed), which loads it; -p from the tree.
PLUGIN_ARGS = (
    []
    if any(ep.value == "samplecheck_subject.pytest_plugin" for ep in entry_points(group="pytest11"))
    else ["-p", "samplecheck_subject.pytest_plugin"]
)


@pytest.fixture(scope="session")
def samplecheck_bin():
    """$SAMPLECHECK_BIN (ctest sets it); unset: the tests that need the binary are skipped."""
    path = os.environ.get("SAMPLECHECK_BIN")
    if not path:
        pytest.skip("SAMPLECHECK_BIN is not set (ctest sets it to the built samplecheck)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"SAMPLECHECK_BIN={path} is not executable")
    return path


def subject_command(*args):
    """The --exec command serving `args` with this interpreter (the package and tests/ come from PYTHONPATH)."""
    return " ".join([sys.executable, "-m", "samplecheck_subject.run", *args])


def qualify(samplecheck_bin, exec_command, *args, env=None, timeout=600):
    """`samplecheck qualify --exec EXEC_COMMAND ARGS` (env: added to this environment); its exit
    status and output, printed (pytest shows it under a failed test)."""
    done = subprocess.run(
        [samplecheck_bin, "qualify", "--exec", exec_command, *args],
        env=dict(os.environ, **(env or {})),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    print(done.stdout)
    return done.returncode, done.stdout


@pytest.fixture
def run_qualify(samplecheck_bin):
    return functools.partial(qualify, samplecheck_bin)


@pytest.fixture
def run_checks(run_qualify):
    """`checks` at the quick budget on the subject `subject` of `subjects` (module:function),
    served over --exec: run_checks(subjects, subject, checks, *more qualify args)."""

    def run(subjects, subject, checks, *args, **kwargs):
        command = subject_command(subjects, "--subject", subject)
        return run_qualify(command, "--budget", "quick", "--checks", checks, *args, **kwargs)

    return run


@pytest.fixture
def require_killed(run_checks):
    """Runs `check` alone on a planted defect (as run_checks does) and requires the run to fail
    on that check: exit status 1 and a FAIL among the check's rows."""

    def require(subjects, subject, check):
        status, table = run_checks(subjects, subject, check)
        rows = [line for line in table.splitlines() if line.startswith(check)]
        assert status == 1 and rows and any(" FAIL " in f" {line} " for line in rows), table

    return require
