"""Qualify a Python callable from Python: runs `samplecheck qualify` on it and returns the
verdict, samplecheck's table and (with report_dir) its report.json.

The callable is served from a forked child of this process (`--connect`), so closures,
bound methods and factory-built callables work. Where a fork cannot serve it (no fork on
this platform, CUDA already initialised here for a "cuda" subject, or a samplecheck without
--connect) it travels by reference instead (`--exec "python -m samplecheck_subject.run
MODULE:NAME --descriptor JSON"`): then it must be a module-level callable, imported afresh
by the subject process with this process's sys.path.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .forkserve import ForkServer, fork_possible
from .judge import find_binary, find_judge, supports
from .report import Report, load_report
from .run import resolve
from .serve import Descriptor, Subject

__all__ = [
    "EXIT_FAIL",
    "EXIT_PASS",
    "EXIT_SKIP",
    "EXIT_USAGE",
    "Budget",
    "QualifyResult",
    "ServeRoute",
    "find_binary",
    "qualify",
    "reference_of",
    "replay",
    "subject_command",
]

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77
# samplecheck's --budget.
Budget = Literal["quick", "standard"]
# How the subject reaches samplecheck: "fork" (served from a child of this process, --connect)
# or "exec" (imported by reference in a process of its own, --exec).
ServeRoute = Literal["fork", "exec"]


@dataclass
class QualifyResult:
    returncode: int  # 0 pass, 1 a check failed, 2 usage, 77 nothing judged (device absent, all n/a)
    output: str  # samplecheck's table and messages (stdout, then stderr)
    command: list[str]
    route: ServeRoute
    subject_command: str | None  # the --exec command (route "exec")
    report: Report | None  # report.json, when report_dir was given
    environment: dict[str, str]  # what samplecheck ran with

    @property
    def passed(self) -> bool:
        return self.returncode == EXIT_PASS

    @property
    def skipped(self) -> bool:
        return self.returncode == EXIT_SKIP


def reference_of(fn: Subject | str) -> str:
    """'module:qualname' naming fn, checked to resolve back to fn itself."""
    if isinstance(fn, str):
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise TypeError(
            f"{fn!r} cannot be imported by name (a lambda, a closure, a bound method or a __main__ "
            f"function), and it has to be here: define it at module level, or pass 'module:name'."
        )
    target = f"{module}:{qualname}"
    try:
        same = resolve(target) is fn
    except Exception as e:  # noqa: BLE001 - any failure to resolve is the same usage error
        raise TypeError(f"qualify: {target} does not import: {e}") from None
    if not same:
        raise TypeError(f"qualify: {target} names another object than the callable given")
    return target


def subject_command(fn: Subject | str, descriptor: Descriptor, python: str | None = None) -> str:
    """The --exec command line that serves fn under descriptor."""
    argv = [
        python or sys.executable,
        "-m",
        "samplecheck_subject.run",
        reference_of(fn),
        "--descriptor",
        json.dumps(descriptor.to_json()),
    ]
    return shlex.join(argv)


def _route(binary: str, descriptor: Descriptor, command: str) -> tuple[ServeRoute, str | None]:
    """("fork", None), or ("exec", why a fork cannot serve this subject)."""
    why = fork_possible([descriptor])
    if why is None and not supports(binary, "--connect", command):
        why = f"{binary} {command} has no --connect (a samplecheck older than this package)"
    return ("exec", why) if why else ("fork", None)


def _options(
    budget: Budget,
    checks: Sequence[str] | str | None,
    seed: int | None,
    timeout: float | None,
    report_dir: str | Path | None,
    quiet: bool,
) -> list[str]:
    options = ["--budget", budget]
    if checks:
        options += ["--checks", checks if isinstance(checks, str) else ",".join(checks)]
    if seed is not None:
        options += ["--seed", str(seed)]
    if timeout is not None:
        options += ["--timeout", str(timeout)]
    if report_dir is not None:
        options += ["--report-dir", str(report_dir)]
    return options + (["-q"] if quiet else [])


@functools.cache
def _default_path(python: str) -> frozenset[str]:
    """The sys.path `python` has with no PYTHONPATH (its standard library, its site-packages)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [python, "-c", "import json, sys; print(json.dumps(sys.path))"],
        env=env,
        cwd="/",
        stdout=subprocess.PIPE,
        text=True,
        timeout=60,
        check=False,
    )
    return frozenset(json.loads(done.stdout)) if done.returncode == 0 else frozenset()


def _environment(env: Mapping[str, str] | None, html: bool) -> dict[str, str]:
    environment = dict(os.environ if env is None else env)
    # An --exec subject imports fn's module as this process does: the entries of sys.path
    # that its interpreter would not have by itself (the test's folder, a source checkout).
    given = [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    extra = [p for p in sys.path if p and p not in _default_path(sys.executable)]
    environment["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(extra + given))
    if not html:
        # samplecheck runs report.html's renderer (matplotlib, seconds) with $SAMPLECHECK_PYTHON:
        # `true` as that Python leaves report.json and junit.xml, and says nothing.
        environment["SAMPLECHECK_PYTHON"] = "true"
    return environment


def _execute(
    command: list[str], route: ServeRoute, fn: Subject | str, descriptor: Descriptor, environment: dict[str, str]
) -> tuple[int, str]:
    """Runs samplecheck (serving fn from forks on route "fork"); its exit status and output."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        if route == "fork":
            assert not isinstance(fn, str)  # a name goes by --exec
            with ForkServer([(fn, descriptor)]) as server:
                returncode = server.run([*command[:2], "--connect", server.path, *command[2:]], environment, out, err)
        else:
            returncode = subprocess.run(
                command, env=environment, stdin=subprocess.DEVNULL, stdout=out, stderr=err, check=False
            ).returncode
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    return returncode, text + (("\n" + errors) if errors.strip() else "")


def _subject_route(
    fn: Subject | str, descriptor: Descriptor, binary: str, command: str
) -> tuple[ServeRoute, list[str]]:
    """The route, and the options naming the subject on it (--exec CMD; --connect comes later)."""
    route, why_not_fork = ("exec", None) if isinstance(fn, str) else _route(binary, descriptor, command)
    if route == "fork":
        return route, []
    try:
        return route, ["--exec", subject_command(fn, descriptor)]
    except TypeError as e:
        raise TypeError(f"qualify: {why_not_fork}, so the callable must be imported by name: {e}") from None


def qualify(
    fn: Subject | str,
    descriptor: Descriptor,
    budget: Budget = "quick",
    checks: Sequence[str] | str | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    extra_args: Sequence[str] = (),
    binary: str | None = None,
    report_dir: str | Path | None = None,
    require_device: bool = False,
    quiet: bool = True,
    html: bool = True,
    env: Mapping[str, str] | None = None,
) -> QualifyResult:
    """Runs the battery on fn. budget: "quick" or "standard"; checks: the ones to run (default
    all); seed: the run seed (default samplecheck's fixed one); timeout: seconds a check may
    take before it is a TIMEOUT (default the budget's); extra_args: more `samplecheck
    qualify` options (--alpha, --vocab-size, --shape, ...); report_dir: report.json, junit.xml,
    report.html (unless html=False) and the failed checks' records there; require_device: a
    subject whose device is absent fails (exit 1) instead of exit 77; quiet: no progress."""
    judge = find_judge(binary)
    route, subject = _subject_route(fn, descriptor, judge.path, "qualify")
    command = [judge.path, "qualify", *subject, *_options(budget, checks, seed, timeout, report_dir, quiet)]
    if require_device and supports(judge.path, "--require-device"):
        command.append("--require-device")
    command += list(extra_args)
    environment = _environment(env, html)
    returncode, output = _execute(command, route, fn, descriptor, environment)
    exec_command = subject[1] if subject else None
    report_file = Path(report_dir) / "report.json" if report_dir is not None else None
    report = load_report(report_file) if report_file is not None and report_file.is_file() else None
    return QualifyResult(returncode, output, command, route, exec_command, report, environment)


def replay(
    fn: Subject | str,
    descriptor: Descriptor,
    record: str | Path,
    binary: str | None = None,
    env: Mapping[str, str] | None = None,
) -> QualifyResult:
    """`samplecheck replay RECORD` on fn: returncode is the check's (0 pass, 1 FAIL or
    TIMEOUT, 77 device absent, 2 a record it cannot replay); output has the recorded and the
    new numbers, REPRODUCED or not."""
    judge = find_judge(binary)
    route, subject = _subject_route(fn, descriptor, judge.path, "replay")
    command = [judge.path, "replay", str(record), *subject]
    environment = _environment(env, html=True)
    returncode, output = _execute(command, route, fn, descriptor, environment)
    return QualifyResult(returncode, output, command, route, subject[1] if subject else None, None, environment)
