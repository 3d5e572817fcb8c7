"""Qualify a Python callable from Python: runs `samplecheck qualify --exec "python -m
samplecheck_subject.run MODULE:NAME --descriptor JSON"` and returns its verdict and table.

The callable travels by reference (its module and qualified name), so it must be a
module-level function or object; the subject process imports it afresh, with this
process's sys.path, and samplecheck judges it from the outside.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass

from .run import resolve

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_SKIP = 0, 1, 2, 77


@dataclass
class QualifyResult:
    returncode: int
    output: str  # samplecheck's table and messages (stdout, then stderr)
    command: list

    @property
    def passed(self):
        return self.returncode == EXIT_PASS

    @property
    def skipped(self):
        return self.returncode == EXIT_SKIP


def find_binary(explicit=None):
    """The samplecheck executable: `explicit`, else $SAMPLECHECK_BIN, else `samplecheck` on PATH."""
    candidate = explicit or os.environ.get("SAMPLECHECK_BIN") or shutil.which("samplecheck")
    if not candidate:
        raise FileNotFoundError("samplecheck binary not found: set SAMPLECHECK_BIN (or pytest's --samplecheck-bin)")
    if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
        raise FileNotFoundError(f"samplecheck binary {candidate!r} is not an executable file")
    return candidate


def reference_of(fn):
    """'module:qualname' naming fn, checked to resolve back to fn itself."""
    if isinstance(fn, str):
        return fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        raise TypeError(
            f"qualify needs a module-level callable that the subject process can import by name; "
            f"{fn!r} is not one (a lambda, a closure or a __main__ function). Define it at module level, "
            f"or pass 'module:name'.")
    target = f"{module}:{qualname}"
    try:
        same = resolve(target) is fn
    except Exception as e:  # noqa: BLE001 - any failure to resolve is the same usage error
        raise TypeError(f"qualify: {target} does not import: {e}") from None
    if not same:
        raise TypeError(f"qualify: {target} names another object than the callable given")
    return target


def subject_command(fn, descriptor, python=None):
    """The --exec command line that serves fn under descriptor."""
    argv = [python or sys.executable, "-m", "samplecheck_subject.run", reference_of(fn),
            "--descriptor", json.dumps(descriptor.to_json())]
    return " ".join(shlex.quote(a) for a in argv)


def qualify(fn, descriptor, budget="quick", checks=None, binary=None, extra_args=(), timeout=None,
            env=None):
    """Runs the battery on fn; returns a QualifyResult (returncode 0 pass, 1 a check failed,
    2 usage, 77 skipped)."""
    command = [find_binary(binary), "qualify", "--exec", subject_command(fn, descriptor),
               "--budget", budget]
    if checks:
        command += ["--checks", checks if isinstance(checks, str) else ",".join(checks)]
    command += list(extra_args)
    environment = dict(os.environ if env is None else env)
    # The subject process imports fn's module as this process does.
    paths = [p for p in sys.path if p] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    environment["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    done = subprocess.run(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout, text=True)
    output = done.stdout + (("\n" + done.stderr) if done.stderr.strip() else "")
    return QualifyResult(done.returncode, output, command)
