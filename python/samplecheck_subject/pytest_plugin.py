"""pytest integration (registered through the `pytest11` entry point): a `qualify` fixture,
so a test in a framework's own suite judges a callable and fails with the battery's table.

    def test_my_sampler(qualify):
        qualify(my_module.sample, DESCRIPTOR)                  # quick budget, every check
        qualify(my_module.sample, DESCRIPTOR, budget="standard", checks=["support", "ties"])

The samplecheck binary: --samplecheck-bin, else $SAMPLECHECK_BIN, else `samplecheck` on PATH.
Exit 1 (a check failed) and 2 (bad usage) fail the test with samplecheck's output; 77 (the
subject's device is absent) skips it with the reason.
"""

import pytest

from .qualify import EXIT_PASS, EXIT_SKIP, find_binary, qualify as run_qualify


def pytest_addoption(parser):
    group = parser.getgroup("samplecheck")
    group.addoption("--samplecheck-bin", default=None,
                    help="the samplecheck executable (default: $SAMPLECHECK_BIN, then PATH)")


@pytest.fixture
def qualify(request):
    binary = request.config.getoption("--samplecheck-bin")

    def judge(fn, descriptor, budget="quick", checks=None, extra_args=(), timeout=None):
        try:
            path = find_binary(binary)
        except FileNotFoundError as e:
            pytest.fail(str(e), pytrace=False)
        result = run_qualify(fn, descriptor, budget=budget, checks=checks, binary=path,
                             extra_args=extra_args, timeout=timeout)
        if result.returncode == EXIT_SKIP:
            pytest.skip(f"samplecheck: {descriptor.name} cannot run here:\n{result.output}")
        if result.returncode != EXIT_PASS:
            verdict = "failed" if result.returncode == 1 else f"exited with status {result.returncode}"
            pytest.fail(f"samplecheck qualify {verdict} for {descriptor.name}:\n{result.output}",
                        pytrace=False)
        return result

    return judge
