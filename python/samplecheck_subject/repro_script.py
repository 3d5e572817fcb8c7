"""python -m samplecheck_subject.repro_script FILE.json [-o OUT.py]

(also `samplecheck repro-script FILE.json [-o OUT.py]`, which starts this module.)

Writes one Python file that reproduces a failed check's record (docs/repro-format.md,
"Standalone scripts") with the subject's upstream package, numpy and torch only: the
judged row's values as the subject was sent them, the subject called as its adapter calls
it (the adapter's SCRIPT_CALLS), the check's number of draws of that row, and the
verdict: an OUT token drawn, or the statistic the check judged below the record's level
(goodness_of_fit's Pearson and directed family, the tail count, a tie group's split); of a
parameter_routing record, the failing output's input row alone under its own setting; of a
batch_invariance, batch_reorder, per_request_seeds or run_to_run record, the request in the
batches or calls the check compared (repro_batch); of an offset_advancement, parallel_samples or
statistical per_request_seeds record, the check's pairs of requests and their equal tokens
(repro_collision). The script exits 1 when it reproduces, 0 when not.

Exit status here: 0 written; 2 a record this cannot script, naming the file and the field.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import importlib
import json
import os
import sys
import zlib
from typing import Any

from . import repro_template
from .descriptor import DTYPES
from .repro_addressing import addressing
from .script_call import ScriptCall

# The modules whose subjects can appear in a record, searched for the subject's call (the
# one the record's exec names first; a record the pytest plugin wrote names none).
ADAPTER_MODULES = (
    "samplecheck_subject.numpy_samplers",
    "samplecheck_subject.adapters.sglang_shipped",
    "samplecheck_subject.adapters.torch_samplers",
    "samplecheck_subject.adapters.flashinfer_samplers",
    "samplecheck_subject.adapters.jax_categorical",
    "samplecheck_subject.adapters.vllm_shipped",
    "samplecheck_subject.adapters.flashinfer_cake",
)
# Checks that judge where one row's draws land; the others judge streams or batches.
# parameter_routing's OUT token is scripted from its input row alone (ROUTING_NOTE).
ROW_CHECKS = ("support", "goodness_of_fit", "ties", "tail", "degenerate_rows", "parameter_routing")
# Checks failed by one request's two tokens where one is due: scripted in batches (repro_batch).
BATCH_CHECKS = ("batch_invariance", "batch_reorder", "per_request_seeds", "run_to_run")
# Checks failed by too many equal pairs of requests' tokens: their pairs drawn again (repro_collision).
COLLISION_CHECKS = ("offset_advancement", "per_request_seeds", "parallel_samples")
PARAMS = ("top_k", "top_p", "min_p", "temperature")


class RecordError(Exception):
    """A record this cannot script: the field and why."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"field '{field}': {why}")


def read_record(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError("file", f"cannot be read ({e.__class__.__name__}: {e})") from e
    try:
        record = json.loads(text)
    except json.JSONDecodeError as e:
        raise RecordError("file", f"not JSON ({e})") from e
    if not isinstance(record, dict):
        raise RecordError("file", "not a JSON object")
    return record


def field(record: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    """record[name] (dotted: nested), of the given type."""
    value: Any = record
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            raise RecordError(name, "missing")
        value = value[part]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise RecordError(name, f"{type(value).__name__}, not {getattr(kind, '__name__', kind)}")
    return value


def exec_module(record: dict[str, Any]) -> tuple[str | None, str | None]:
    """(module, attribute) of `python -m samplecheck_subject.run MODULE:ATTRIBUTE` in the
    record's exec, or (None, None)."""
    words = str(record.get("exec") or "").split()
    if "samplecheck_subject.run" in words:
        after = words[words.index("samplecheck_subject.run") + 1 :]
        if after and ":" in after[0] and not after[0].endswith(".py"):
            module, _, attribute = after[0].partition(":")
            return module, attribute
    return None, None


def subject_names(module: Any, attribute: str | None) -> set[str]:
    """The subjects a module serves: its DESCRIPTORS, else its factory's (the record's; a
    module with DESCRIPTORS may need torch or a device to run its factory)."""
    names = set(getattr(module, "DESCRIPTORS", {}) or {})
    factory = getattr(module, attribute, None) if attribute else None
    if not names and callable(factory):
        try:
            made = factory()
            pairs = made[0] if isinstance(made, tuple) and len(made) == 2 else made
            names |= {d.name for _, d in pairs}
        except Exception:  # noqa: BLE001 - a factory that cannot run here lists nothing
            pass
    return names


def script_call(record: dict[str, Any]) -> tuple[ScriptCall, str]:
    """The subject's declared call and the module that declares it."""
    subject = field(record, "subject", str)
    # A record is data: only this package's adapter modules are imported, never a module
    # the record's exec names by itself (that would run code from a shared file).
    module_name, attribute = exec_module(record)
    candidates = sorted(ADAPTER_MODULES, key=lambda m: m != module_name)
    known_in = None
    for name in candidates:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        calls = getattr(module, "SCRIPT_CALLS", {})
        if subject in calls:
            return calls[subject], name
        if subject in subject_names(module, attribute if name == module_name else None):
            known_in = name
    if known_in:
        raise RecordError("subject", f"{subject} ({known_in}) declares no script call (SCRIPT_CALLS)")
    if not any(record.get(k) for k in ("exec", "connect", "plugin")):
        raise RecordError(
            "subject",
            f"{subject} is one of samplecheck's own C++ subjects (the record names no "
            "process): only the Python adapters declare script calls; samplecheck replay runs it",
        )
    raise RecordError("subject", f"unknown subject {subject}: no adapter module ({', '.join(candidates)}) serves it")


def row_arrays(record: dict[str, Any]) -> dict[str, Any]:
    """The judged row from evidence.row_data: values, status and q as raw bytes."""
    if "row_data" not in record.get("evidence", {}):
        raise RecordError(
            "evidence.row_data",
            "missing: the record names its row only by label (written by a "
            "samplecheck before records kept the row, or by a check that judges no single row)",
        )
    values = decode(record, "values_f32")
    vocab = len(values) // 4
    status = field(record, "evidence.row_data.status", str).encode("ascii", "replace")
    q = decode(record, "q_f64")
    if len(values) % 4 or len(status) != vocab or len(q) != 8 * vocab or set(status) - set(b"IOB"):
        raise RecordError(
            "evidence.row_data",
            f"values, status and q_f64 disagree on V (values {len(values)} "
            f"bytes, status {len(status)}, q {len(q)} bytes)",
        )
    draws = field(record, "evidence.row_data.draws", int)
    if draws <= 0:
        raise RecordError("evidence.row_data.draws", f"{draws}: no draws")
    return {
        "values": values,
        "status": status,
        "q": q,
        "draws": draws,
        "vocab": vocab,
        "label": field(record, "evidence.row_data.label", str),
    }


def decode(record: dict[str, Any], name: str) -> bytes:
    """The row's field `name` (evidence.row_data), base64-decoded."""
    return decode_field(record, f"evidence.row_data.{name}")


def decode_field(record: dict[str, Any], name: str) -> bytes:
    """record[name] (dotted), base64-decoded."""
    text = field(record, name, str)
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as e:
        raise RecordError(name, f"not base64 ({e})") from e


def verdict_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """Which verdict the script gives: an OUT draw ("out"), the row's goodness-of-fit
    statistics ("fit"), the tail count ("tail") or one tie group's split ("ties")."""
    if field(record, "kind", str) != "sampler":
        raise RecordError("kind", f"{record['kind']}: only sampler checks have a row to draw from")
    check = field(record, "check", str)
    if check == "degenerate_rows" and "row_data" not in record.get("evidence", {}):
        raise RecordError(
            "evidence.row_data",
            "missing: of degenerate_rows' failures only a treat_as_zero row that drew a token it gives "
            "probability 0 keeps its row (a refused batch, a valid flag or a changed neighbour is not a "
            "draw to repeat); samplecheck replay runs it",
        )
    if check not in ROW_CHECKS:
        raise RecordError(
            "check",
            f"{check} judges streams or batches, not one row's draws; a script reproduces "
            f"{', '.join(dict.fromkeys(ROW_CHECKS + BATCH_CHECKS + COLLISION_CHECKS))}",
        )
    evidence = field(record, "evidence", dict)
    verdict = statistic(check, evidence)
    level = field(record, "decision_level", (int, float)) if verdict != "out" else 0.0
    if verdict != "out" and not 0 < level <= 0.5:
        raise RecordError("decision_level", f"{level} is outside (0, 0.5]")
    params = field(record, "evidence.params", dict)
    for name in PARAMS:
        field(record, f"evidence.params.{name}", (int, float))
    return {"check": check, "verdict": verdict, "level": float(level), "params": {k: params[k] for k in PARAMS}}


def statistic(check: str, evidence: dict[str, Any]) -> str:
    """The verdict of a record: an OUT token's wherever one was drawn, else the check's statistic."""
    if "token" in evidence:
        return "out"
    if check == "goodness_of_fit" or (check == "ties" and "group_size" not in evidence):
        return "fit"  # ties at the k-th are judged as goodness_of_fit judges its rows
    if check == "ties" and "tie_group" not in evidence:
        raise RecordError("evidence.tie_group", "missing: a ties record written before records kept the tied group")
    if check == "tail" and "tail" not in evidence:
        raise RecordError("evidence.tail", "missing: a tail record written before records kept the tail set")
    if check in ("ties", "tail"):
        return check
    raise RecordError("evidence.token", f"missing: a {check} failure is an OUT token, and the record names none")


def verdict_constants(record: dict[str, Any], v: dict[str, Any], row: dict[str, Any]) -> list[str]:
    """The script's constants of its verdict (the tail set, the tie group, the BOUNDARY mass)."""
    bounds = record["evidence"]["row_data"].get("boundary_mass")
    mass = None
    if bounds is not None:
        if not isinstance(bounds, list) or len(bounds) != 2 or not all(fraction(b) for b in bounds):
            raise RecordError("evidence.row_data.boundary_mass", f"{bounds!r} is not two masses in [0, 1]")
        mass = (float(bounds[0]), float(bounds[1]))
    lines = [
        f"VERDICT = {v['verdict']!r}  # out: an OUT draw alone; fit, tail, ties: the check's statistic",
        f"LEVEL = {v['level']!r}  # the record's decision_level",
        f"BOUNDARY_MASS = {mass!r}  # the BOUNDARY tokens' target mass, [min, max] (None: not recorded)",
    ]
    tail = tail_constants(record, row) if v["verdict"] == "tail" else ["TAIL_THRESHOLD = TAIL_MASS = TAIL_SET = None"]
    return lines + tail + [f"GROUP_FIRST = {tie_group(record, row) if v['verdict'] == 'ties' else None}"]


def fraction(value: object) -> bool:
    """A number in [0, 1] (a NaN or infinity, which JSON's readers accept, is none)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def tail_constants(record: dict[str, Any], row: dict[str, Any]) -> list[str]:
    mask = field(record, "evidence.tail.set", str).encode("ascii", "replace")
    if len(mask) != row["vocab"] or set(mask) - set(b"T-"):
        raise RecordError("evidence.tail.set", f"{len(mask)} characters of T and -, not V = {row['vocab']}")
    bounds = {}
    for name in ("threshold", "expected_mass"):
        bounds[name] = float(field(record, f"evidence.tail.{name}", (int, float)))
        if not fraction(bounds[name]):
            raise RecordError(f"evidence.tail.{name}", f"{bounds[name]} is outside [0, 1]")
    return [
        f"TAIL_THRESHOLD = {bounds['threshold']!r}",
        f"TAIL_MASS = {bounds['expected_mass']!r}  # its target mass",
        "# The tail set: T for a token whose target probability is below the threshold. zlib, then base64.",
        f"TAIL_SET = {packed(mask)}",
    ]


def tie_group(record: dict[str, Any], row: dict[str, Any]) -> int:
    """The group's first token, once the row's values hold the recorded group: the IN tokens
    of that token's value (GROUP_FIRST in the script)."""
    first = field(record, "evidence.tie_group.first", int)
    size = field(record, "evidence.tie_group.size", int)
    if not 0 <= first < row["vocab"]:
        raise RecordError("evidence.tie_group.first", f"token {first} is outside [0, {row['vocab']})")
    values = memoryview(row["values"]).cast("f")
    group = [t for t in range(row["vocab"]) if row["status"][t] == ord("I") and values[t] == values[first]]
    if len(group) != size:
        raise RecordError("evidence.tie_group", f"token {first}'s value holds {len(group)} IN tokens, not {size}")
    return first


def packed(data: bytes) -> str:
    """zlib, then base64, wrapped at 100 columns: a row of V float32 stays a few hundred KB."""
    text = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
    return "(\n" + "\n".join(f'    "{text[i : i + 100]}"' for i in range(0, len(text), 100)) + "\n)"


def versions(record: dict[str, Any], call: ScriptCall) -> str:
    environment = record.get("environment") or {}
    packages = environment.get("packages") or {}
    named = [f"{p} {packages[p]}" for p in call.packages if p in packages]
    if not named:
        return "not recorded (a record written before records kept the subject's environment)"
    python = environment.get("python")
    return ", ".join(named) + (f"; Python {python}" if python else "")


HEADER = '''#!/usr/bin/env python3
"""Standalone reproduction: {subject}, check {check}{dtype}, row {label}.

Record: {record}
  {verdict}, {recorded}, {samples} draws in the check
  (budget {budget}, V = {vocab}, run seed {seed}).
Upstream, as the record's environment names it: {versions}
Calls: {what}; declared in {module}.SCRIPT_CALLS.
Draws {draws} tokens from the row (the check's draws of it) {drawing} and judges them:
{judged}.
Needs the subject's package, numpy and/or torch; nothing of samplecheck.

Run:  {run}  [--seed N]
Exit status: 1 reproduced, 0 not reproduced, 2 it could not run (an import or the call failed).
Written by samplecheck_subject.repro_script (docs/repro-format.md, "Standalone scripts").
"""
'''


def inert(value: object) -> str:
    """A record's value as docstring text: a record is data, so no quote, backslash or newline
    from it may end the docstring and become code in the script (JSON's escapes keep it legible)."""
    return json.dumps(str(value))[1:-1]


def inert_fields(**fields: object) -> dict[str, str]:
    return {name: inert(value) for name, value in fields.items()}


JUDGED = {
    "out": "a token the reference gives probability 0 (OUT) drawn",
    "fit": "the statistics the check judged the row by (row_tests.h): Pearson's chi-square over\n"
    "the merged cells, the cuts and the heavy tokens (exact binomial tails), Sidak over\n"
    "the two, the BOUNDARY count beside them; p below {level:.3e} (the record's decision_level)",
    "tail": "the draws on the tail set against its target mass, the exact two-sided binomial\n"
    "p-value below {level:.3e} (the record's decision_level)",
    "ties": "the tied group's draws against equal shares (Pearson up to 16 tokens, else 7\n"
    "dyadic splits by exact binomial tails, Sidak over them), p below {level:.3e}\n"
    "(the record's decision_level)",
}

# parameter_routing's batch held 8 input rows of mixed parameters; the script draws the
# failing output's row alone under that row's own parameters, which tells the two causes apart.
ROUTING_NOTE = (
    ",\nthe failing output's input row alone under its own parameters (parameter_routing's batch\n"
    "held 8 rows of mixed parameters): reproduced, the row's own parameters give the OUT token\n"
    "(not a routing fault); not reproduced, the batch's routing is at fault (samplecheck replay)"
)


def common_fields(record: dict[str, Any], path: str, run: str, call: ScriptCall, module: str, label: str) -> dict:
    """The header fields every script has (the record's, made inert): what, from where, how to run."""
    return inert_fields(
        subject=record["subject"],
        check=record["check"],
        dtype=f" [{record['dtype']}]" if record.get("dtype") else "",
        label=repr(label),
        record=os.path.abspath(path),
        verdict=record.get("verdict", "FAIL"),
        versions=versions(record, call),
        what=call.what,
        module=module,
        run=run,
    )


def header(record: dict[str, Any], path: str, run: str, call: ScriptCall, module: str, v: dict[str, Any]) -> str:
    row = record["evidence"]["row_data"]
    p_value = record.get("p_value")
    judged = JUDGED[v["verdict"]].format(level=v["level"])
    if record["check"] == "parameter_routing":
        judged += ROUTING_NOTE
    return HEADER.format(
        **common_fields(record, path, run, call, module, row["label"]),
        **inert_fields(
            recorded=f"p-value {p_value:.3e}" if isinstance(p_value, (int, float)) else "exact failure",
            samples=record.get("samples", "?"),
            budget=record.get("budget"),
            vocab=record.get("vocab_size"),
            seed=record.get("seed"),
            draws=row["draws"],
        ),
        judged=judged,  # this module's own text, not the record's
        drawing="as the check's requests of it (its seed and subsequences: the check's draws)"
        if call.keyed
        else "from a seed of its own (the\nsubject's own generator or numpy's, not the check's streams)",
    )


def script_text(record: dict[str, Any], path: str, out: str) -> tuple[str, str]:
    """The whole script and how to run it, or RecordError naming the field that stops it."""
    evidence = record.get("evidence") if isinstance(record.get("evidence"), dict) else {}
    if record.get("check") in COLLISION_CHECKS and "tokens" not in evidence:
        from .repro_collision import collision_script_text  # it builds on this module's readers

        return collision_script_text(record, path, out)
    if record.get("check") in BATCH_CHECKS:
        from .repro_batch import batch_script_text

        return batch_script_text(record, path, out)
    v = verdict_inputs(record)
    call, module = script_call(record)
    row = row_arrays(record)
    run = call.run.format(script=out)
    seed = record["evidence"].get("check_seed", record.get("seed", 0))
    dtype = record.get("dtype") if record.get("dtype") in DTYPES else None
    stream_seed, first = addressing(record)
    if v["check"] == "parameter_routing" and call.keyed:
        row["draws"] = 1  # the output's own request; other outputs of its row are not recorded
    if call.keyed and first is None:
        raise RecordError(
            "evidence.first_subsequence",
            f"{record['subject']} keys its noise by the check's request: the record must give the "
            "stream seed and the row's first request (a tie group's row has none where its draws took "
            "several routes); a record written before records kept it: the row's index and draws_per_row "
            "(support, goodness_of_fit, tail, a ties OUT token) or parameter_routing's output subsequence",
        )
    constants = "\n".join(
        [
            f"SUBJECT = {record['subject']!r}",
            f"CHECK = {v['check']!r}",
            f"LABEL = {row['label']!r}",
            f"PARAMS = {v['params']!r}",
            f"DRAWS = {row['draws']}",
            f"SEED = {int(seed) % (1 << 63)}",
            f"DTYPE = {dtype!r}  # the dtype the row was sent in (its float32 values are exact in it)",
            *verdict_constants(record, v, row),
            f"STREAM_SEED = {stream_seed!r}  # the check's: draw i of the row was its request (seed, subsequence",
            f"FIRST_SUBSEQUENCE = {first!r}  # FIRST_SUBSEQUENCE + i, offset 0); None: the record does not say",
            f"# The row as the subject was sent it (float32, V = {row['vocab']}), the reference's status per token",
            "# (I in, O out, B boundary) and its IN-conditional probabilities (float64): zlib, then base64.",
            f"ROW = {packed(row['values'])}",
            f"STATUS = {packed(row['status'])}",
            f"Q = {packed(row['q'])}",
        ]
    )
    tail = [repro_template.MATH, repro_template.MAIN]
    text = repro_template.assemble(header(record, path, run, call, module, v), call, run, ("math",), constants, tail)
    return text, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m samplecheck_subject.repro_script",
        description="a standalone reproduction script for a failed check's record",
    )
    parser.add_argument("file", help="a record written by --repro-dir (or the pytest plugin)")
    parser.add_argument("-o", "--output", help="the script to write (default: FILE with .py)")
    args = parser.parse_args(argv)
    out = args.output or (args.file[:-5] if args.file.endswith(".json") else args.file) + ".py"
    try:
        text, run = script_text(read_record(args.file), args.file, out)
    except RecordError as e:
        print(f"samplecheck repro-script: {args.file}: {e}", file=sys.stderr)
        return 2
    try:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        print(f"samplecheck repro-script: {out}: cannot be written ({e})", file=sys.stderr)
        return 2
    os.chmod(out, 0o755)
    print(f"wrote {out} ({len(text) // 1024} KB); run: {run}")
    return 0


if __name__ == "__main__":
    # The package's module, not this __main__ copy: repro_batch raises the package's RecordError.
    from samplecheck_subject import repro_script

    sys.exit(repro_script.main())
