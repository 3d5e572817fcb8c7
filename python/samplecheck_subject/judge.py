"""Which samplecheck judges, and what it can do.

The binary, first found wins:
 1. the one named for this run (pytest's --samplecheck-bin, qualify's `binary=`);
 2. the one bundled with this package: the wheel installs samplecheck into the
    environment's bin/, and the package's own install record (importlib.metadata) names it,
    so another samplecheck on PATH or a stale $SAMPLECHECK_BIN cannot shadow it;
 3. $SAMPLECHECK_BIN (what ctest sets for the package run from the source tree);
 4. `samplecheck` on PATH.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Literal

from .descriptor import SubjectKind

DISTRIBUTION = "samplecheck"
# Where the judge was found: the order above.
JudgeSource = Literal["--samplecheck-bin", "bundled", "$SAMPLECHECK_BIN", "PATH"]


@dataclass(frozen=True)
class Judge:
    path: str
    source: JudgeSource


@functools.cache
def bundled_binary(name: str = "samplecheck") -> str | None:
    """The command the installed distribution put beside this package, or None when this
    package was not installed by it (a source checkout on sys.path, say)."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    own = (Path(__file__).parent / "__init__.py").resolve()
    if not any(f.name == "__init__.py" and Path(str(dist.locate_file(f))).resolve() == own for f in files):
        return None  # this package came from elsewhere: the record's binary is not its judge
    for f in files:
        if f.parts[-2:] == ("bin", name):
            path = Path(str(dist.locate_file(f))).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def find_judge(explicit: str | None = None) -> Judge:
    """The samplecheck executable, by the order above; FileNotFoundError says what was tried."""
    candidates: list[tuple[str | None, JudgeSource]] = [
        (explicit, "--samplecheck-bin"),
        (bundled_binary(), "bundled"),
        (os.environ.get("SAMPLECHECK_BIN"), "$SAMPLECHECK_BIN"),
        (shutil.which("samplecheck"), "PATH"),
    ]
    for path, source in candidates:
        if not path:
            continue
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise FileNotFoundError(f"samplecheck binary {path!r} (from {source}) is not an executable file")
        return Judge(path, source)
    raise FileNotFoundError(
        "samplecheck binary not found: none bundled with this package (pip install the checkout: "
        "`pip install .`), no $SAMPLECHECK_BIN, none on PATH; or give pytest --samplecheck-bin"
    )


def find_binary(explicit: str | None = None) -> str:
    return find_judge(explicit).path


def _identity(binary: str) -> tuple[str, int]:
    return binary, os.stat(binary).st_mtime_ns  # a rebuilt binary is asked again


@functools.cache
def _help(identity: tuple[str, int], command: str) -> str:
    done = subprocess.run(
        [identity[0], command, "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout


def supports(binary: str, option: str, command: str = "qualify") -> bool:
    """Whether `samplecheck COMMAND` takes `option` (--connect, --require-device)."""
    found = re.search(rf"(^|[\s,]){re.escape(option)}\b", _help(_identity(binary), command), re.MULTILINE)
    return found is not None


@functools.cache
def _checks(identity: tuple[str, int]) -> tuple[tuple[str, str], ...]:
    done = subprocess.run([identity[0], "qualify", "--list"], capture_output=True, text=True, timeout=60, check=False)
    _, found, listed = done.stdout.partition("\nchecks:\n")
    if done.returncode != 0 or not found:
        raise RuntimeError(
            f"{identity[0]} qualify --list gave no check list (exit {done.returncode}): {done.stderr.strip()[-500:]}"
        )
    rows = (re.match(r"\s+(\S+)\s+(sampler|matmul|collective)\s", line) for line in listed.splitlines())
    return tuple((m.group(1), m.group(2)) for m in rows if m)


def check_names(binary: str, kind: SubjectKind) -> list[str]:
    """The checks this samplecheck runs on a subject of `kind` ("sampler", "matmul" or "collective"),
    in its order."""
    return [name for name, k in _checks(_identity(binary)) if k == kind]
