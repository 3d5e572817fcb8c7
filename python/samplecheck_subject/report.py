"""report.json (docs/report-schema.json, version 1) as Python objects, and one check's
outcome over its rows (a check runs once per input dtype)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

# docs/report-schema.json's verdicts: a check's on one dtype, and a subject run's.
CheckVerdict = Literal["pass", "FAIL", "TIMEOUT", "n/a", "skipped", "ERROR"]
RunVerdict = Literal["PASS", "FAIL", "SKIPPED"]
# A check's verdict over its rows (Outcome).
OutcomeState = Literal["failed", "skipped", "n/a", "passed", "missing"]

FAILING: tuple[CheckVerdict, ...] = ("FAIL", "TIMEOUT", "ERROR")


@dataclass(frozen=True)
class CheckRow:
    """One row of the table: a check on one dtype."""

    check: str
    dtype: str | None
    verdict: CheckVerdict
    detail: str
    repro_path: str | None
    p_value: float | None

    @property
    def label(self) -> str:
        return self.check if self.dtype is None else f"{self.check} [{self.dtype}]"


@dataclass(frozen=True)
class SubjectRun:
    subject: str
    verdict: RunVerdict
    rows: tuple[CheckRow, ...]


@dataclass(frozen=True)
class Report:
    exit_status: int
    runs: tuple[SubjectRun, ...]

    def rows_of(self, check: str) -> list[CheckRow]:
        return [row for run in self.runs for row in run.rows if row.check == check]

    def checks(self) -> list[str]:
        return list(dict.fromkeys(row.check for run in self.runs for row in run.rows))


@dataclass(frozen=True)
class Outcome:
    """A check's verdict over its rows: "failed" (a row FAIL, TIMEOUT or ERROR), "skipped"
    (every row skipped: the device is absent), "n/a" (every row n/a or skipped, with the
    premise's reason), "passed" (otherwise), or "missing" (the report has no row for it)."""

    state: OutcomeState
    rows: tuple[CheckRow, ...]

    @property
    def failing(self) -> list[CheckRow]:
        return [row for row in self.rows if row.verdict in FAILING]


def outcome(rows: list[CheckRow]) -> Outcome:
    verdicts = {row.verdict for row in rows}
    state: OutcomeState
    if not rows:
        state = "missing"
    elif verdicts & set(FAILING):
        state = "failed"
    elif verdicts == {"skipped"}:
        state = "skipped"
    elif verdicts <= {"n/a", "skipped"}:
        state = "n/a"
    else:
        state = "passed"
    return Outcome(state, tuple(rows))


def _row(entry: dict[str, Any]) -> CheckRow:
    return CheckRow(
        check=entry["check"],
        dtype=entry.get("dtype"),
        verdict=entry["verdict"],
        detail=entry.get("detail", ""),
        repro_path=entry.get("repro_path"),
        p_value=entry.get("p_value"),
    )


def load_report(path: str | Path) -> Report:
    """Reads report.json; refuses another format or version (as the schema says a reader must)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if data.get("format") != "samplecheck-report" or data.get("version") != 1:
        raise ValueError(
            f"{path}: not a samplecheck report of version 1 "
            f"(format {data.get('format')!r}, version {data.get('version')!r})"
        )
    runs = tuple(
        SubjectRun(subject=run["subject"], verdict=run["verdict"], rows=tuple(_row(c) for c in run.get("checks", ())))
        for run in data.get("runs", ())
    )
    return Report(exit_status=data["exit_status"], runs=runs)
