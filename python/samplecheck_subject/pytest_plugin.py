"""pytest integration (the `pytest11` entry point `samplecheck`): the `qualify` fixture.

    def test_my_sampler(qualify):
        qualify(my_module.sample, DESCRIPTOR)

A test that uses `qualify` is one pytest item per check, test_my_sampler[support],
test_my_sampler[goodness_of_fit], ..., so `-k goodness_of_fit`, `--lf` and `-m` select
checks. The first item of a test to run judges all of that test's selected checks in one
samplecheck run (one subject process, one false-alarm budget); each item then reports its
own check: passed; failed with the check's detail line, its replay command and its record
(written under pytest's temporary directory); skipped when the check is n/a, with the
reason; skipped when the subject's device is absent, with one reason for every item (failed
with --require-device or require_device=True). docs/python.md.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

from .judge import check_names, find_judge
from .qualify import EXIT_SKIP, Budget, QualifyResult, replay
from .qualify import qualify as run_qualify
from .report import FAILING, CheckRow, Outcome, outcome
from .serve import Descriptor, Subject

PARAM = "samplecheck_check"
_STATE = pytest.StashKey["_State"]()


class _State:
    """The session's runs, keyed by test and call, and each test's selected checks."""

    def __init__(self) -> None:
        self.selected: dict[tuple[Any, ...], list[str]] = {}
        self.runs: dict[tuple[Any, ...], QualifyResult | str] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("samplecheck")
    group.addoption(
        "--samplecheck-bin",
        default=None,
        help="the samplecheck executable (default: the one installed with this package, "
        "then $SAMPLECHECK_BIN, then PATH)",
    )
    group.addoption(
        "--require-device",
        action="store_true",
        default=False,
        help="a subject whose device is absent fails its checks instead of skipping them",
    )
    group.addoption(
        "--samplecheck-replay",
        default=None,
        metavar="RECORD",
        help="replay this reproduction record on the selected test's callable instead of "
        "qualifying it (the command a failed check prints)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "samplecheck(kind='sampler', checks=None): the checks a test using the qualify fixture "
        "is split into (kind 'matmul' for a matmul subject, 'collective' for an all-reduce; checks: a "
        "subset, by name)",
    )
    config.stash[_STATE] = _State()


def pytest_report_header(config: pytest.Config) -> str:
    try:
        judge = find_judge(config.getoption("--samplecheck-bin"))
    except FileNotFoundError as e:
        return f"samplecheck: {e}"
    return f"samplecheck: {judge.path} ({judge.source})"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "qualify" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("samplecheck")
    kind = marker.kwargs.get("kind", "sampler") if marker else "sampler"
    wanted = marker.kwargs.get("checks") if marker else None
    try:
        binary = find_judge(metafunc.config.getoption("--samplecheck-bin")).path
    except FileNotFoundError:
        return  # one item, which fails saying so
    known = check_names(binary, kind)
    if wanted is not None:
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise ValueError(
                f"@pytest.mark.samplecheck: no {kind} check {', '.join(unknown)} "
                f"(samplecheck's {kind} checks: {', '.join(known)})"
            )
    names = list(wanted) if wanted is not None else known
    metafunc.parametrize(PARAM, names, ids=names, indirect=True)


def _group(item: pytest.Item) -> tuple[Any, ...]:
    """The items of one test (one set of its other parameters), whatever check each one is."""
    callspec = getattr(item, "callspec", None)
    others = () if callspec is None else tuple(sorted((k, i) for k, i in callspec.indices.items() if k != PARAM))
    parent = item.parent.nodeid if item.parent is not None else ""
    return parent, getattr(item, "originalname", item.name), others


def pytest_collection_finish(session: pytest.Session) -> None:
    state = session.config.stash[_STATE]
    for item in session.items:  # what is left after -k, -m, --lf and the like
        callspec = getattr(item, "callspec", None)
        if callspec is not None and PARAM in callspec.params:
            state.selected.setdefault(_group(item), []).append(str(callspec.params[PARAM]))


@pytest.fixture
def samplecheck_check(request: pytest.FixtureRequest) -> str | None:
    """The check this item reports (None: the test is not split, it reports them all)."""
    return getattr(request, "param", None)


@pytest.fixture
def qualify(
    request: pytest.FixtureRequest, samplecheck_check: str | None, tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., QualifyResult]:
    """qualify(fn, descriptor, budget="quick", checks=None, seed=None, timeout=None,
    extra_args=(), require_device=False): judges fn and reports this item's check."""
    config, item = request.config, request.node
    state = config.stash[_STATE]
    calls = itertools.count()

    def judge(
        fn: Subject,
        descriptor: Descriptor,
        budget: Budget = "quick",
        checks: Sequence[str] | None = None,
        seed: int | None = None,
        timeout: float | None = None,
        extra_args: Sequence[str] = (),
        require_device: bool = False,
    ) -> QualifyResult:
        require = require_device or bool(config.getoption("--require-device"))
        record = config.getoption("--samplecheck-replay")
        if record:
            return _replay(config, fn, descriptor, record, samplecheck_check)
        run_checks = _run_checks(state, item, samplecheck_check, checks)
        key = (
            _group(item),
            next(calls),
            json.dumps(descriptor.to_json(), sort_keys=True),
            budget,
            tuple(run_checks or ()),
            seed,
            timeout,
            tuple(extra_args),
            require,
        )
        if key not in state.runs:
            state.runs[key] = _run(
                config,
                tmp_path_factory,
                fn,
                descriptor,
                run_checks,
                require,
                {"budget": budget, "seed": seed, "timeout": timeout, "extra_args": extra_args},
            )
        return _verdict(state.runs[key], descriptor, samplecheck_check, require, item)

    return judge


def _run_checks(state: _State, item: pytest.Item, check: str | None, checks: Sequence[str] | None) -> list[str] | None:
    """The checks this test's samplecheck run judges: its selected items' (all when the test
    is not split), narrowed by the call's checks=."""
    if check is None:
        return list(checks) if checks is not None else None
    if checks is not None and check not in checks:
        pytest.skip(f"{check} is not among the qualify call's checks={list(checks)}")
    selected = state.selected.get(_group(item), [check])
    return [c for c in selected if checks is None or c in checks]


def _run(
    config: pytest.Config,
    tmp_path_factory: pytest.TempPathFactory,
    fn: Subject,
    descriptor: Descriptor,
    checks: list[str] | None,
    require: bool,
    options: dict[str, Any],
) -> QualifyResult | str:
    """One samplecheck run, or the text of why it could not start (said by every item)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", descriptor.name)[:60]
    report_dir = tmp_path_factory.mktemp(f"samplecheck-{name}", numbered=True) / "report"
    try:
        result = run_qualify(
            fn,
            descriptor,
            checks=checks,
            binary=config.getoption("--samplecheck-bin"),
            report_dir=report_dir,
            require_device=require,
            quiet=True,
            html=False,
            **options,
        )
    except (FileNotFoundError, TypeError) as e:
        return str(e)
    (report_dir.parent / "samplecheck.txt").write_text(result.output)  # the table, beside the report
    return result


def _fail(text: str) -> NoReturn:
    pytest.fail(text, pytrace=False)


def _device_absent(result: QualifyResult, descriptor: Descriptor) -> str | None:
    """The one reason every item of a subject whose device is absent gives, else None."""
    rows = [row for run in result.report.runs for row in run.rows] if result.report else []
    skipped = [row for row in rows if row.verdict == "skipped"]
    if not skipped and not (result.returncode == EXIT_SKIP and not rows):
        return None
    reason = skipped[0].detail if skipped else " ".join(result.output.strip().splitlines()[-1:])
    return f"samplecheck: {descriptor.name}: device absent: {reason}"


def _verdict(
    result: QualifyResult | str, descriptor: Descriptor, check: str | None, require: bool, item: pytest.Item
) -> QualifyResult:
    if isinstance(result, str):
        _fail(result)
    absent = _device_absent(result, descriptor)
    if absent is not None:
        if require:
            _fail(f"{absent} (--require-device: that is a failure)")
        pytest.skip(absent)
    if result.report is None:
        _fail(
            f"samplecheck qualify exited {result.returncode} for {descriptor.name} and wrote no report:\n"
            f"{result.output.strip()}"
        )
    if check is None:
        failing = [row for run in result.report.runs for row in run.rows if row.verdict in FAILING]
        if failing or result.returncode not in (0, EXIT_SKIP):
            _fail(_failure_text(Outcome("failed", tuple(failing)), result, item) or result.output.strip())
        return result
    verdict = outcome(result.report.rows_of(check))
    if verdict.state == "failed":
        _fail(_failure_text(verdict, result, item))
    if verdict.state == "n/a":
        pytest.skip(f"{check} n/a: " + "; ".join(dict.fromkeys(row.detail for row in verdict.rows)))
    if verdict.state == "missing":
        _fail(
            f"samplecheck judged no {check} on {descriptor.name} ({descriptor.kind}; a matmul or "
            f"collective test needs @pytest.mark.samplecheck(kind='matmul') or kind='collective'); "
            f"exit {result.returncode}:\n{result.output.strip()[-2000:]}"
        )
    return result


def _failure_text(verdict: Outcome, result: QualifyResult, item: pytest.Item) -> str:
    """Per failing row: the detail line, the replay command and the record's path."""
    lines = []
    for row in verdict.failing:
        lines.append(f"{row.label} {row.verdict}: {row.detail}")
        if row.repro_path:
            lines.append(f"  replay: {_replay_command(row, result, item)}")
            lines.append(f"  record: {row.repro_path}")
    return "\n".join(lines)


def _replay_command(row: CheckRow, result: QualifyResult, item: pytest.Item) -> str:
    assert row.repro_path is not None
    if result.route == "exec" and result.subject_command is not None:
        # The record names the subject's command; replay needs it given, with the import path.
        python_path = result.environment.get("PYTHONPATH", "")
        return shlex.join(
            [
                "env",
                f"PYTHONPATH={python_path}",
                result.command[0],
                "replay",
                row.repro_path,
                "--exec",
                result.subject_command,
            ]
        )
    # A callable served from this process exists only in a pytest run: the item replays it.
    # Its file by path (a node id is relative to a rootdir, and empty for a file outside it).
    path = os.path.relpath(item.path, Path.cwd())
    where = str(item.path) if path.startswith("..") else path
    test = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
    return shlex.join(["pytest", f"{where}::{test}", "--samplecheck-replay", row.repro_path])


def _replay(
    config: pytest.Config, fn: Subject, descriptor: Descriptor, record: str, check: str | None
) -> QualifyResult:
    """The item is the replayed check: it passes if the check passes now, fails with the
    recorded and the new numbers if it fails again (REPRODUCED, or not)."""
    with open(record, encoding="utf-8") as f:
        recorded = json.load(f)
    if check is not None and recorded.get("check") != check:
        pytest.skip(f"--samplecheck-replay replays {recorded.get('check')}, not {check}")
    result = replay(fn, descriptor, record, binary=config.getoption("--samplecheck-bin"))
    if result.returncode == EXIT_SKIP:
        pytest.skip(f"replayed {os.path.basename(record)}: device absent:\n{result.output.strip()}")
    if result.returncode != 0:
        _fail(f"samplecheck replay exited {result.returncode}:\n{result.output.strip()}")
    return result
