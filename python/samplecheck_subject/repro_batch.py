"""Standalone scripts of batch_invariance records (samplecheck repro-script FILE.json).

A batch_invariance failure is one request (row, seed, subsequence, offset) whose token in a
batch differs from its token alone (B = 1). The script calls the subject as its adapter does
(the adapter's ScriptCall.batch, draw_requests): the request alone, then in a batch of the
recorded size at the recorded slot, every other slot a copy of the same row with a request
of its own; with --sizes all, at every batch size the check ran. It exits 1 when a batch
changes the request's token. The check's batch held other rows and parameters in the other
slots; a subject whose token depends on those (not on the batch's size or the slot) is not
reproduced here, and samplecheck replay runs the recorded batch itself.
"""

from __future__ import annotations

import os
from typing import Any

from . import repro_script as rs
from . import repro_template
from .descriptor import DTYPES
from .script_call import ScriptCall

HEADER = '''#!/usr/bin/env python3
"""Standalone reproduction: {subject}, check batch_invariance{dtype}, row {label}.

Record: {record}
  {verdict}: {detail}
Upstream, as the record's environment names it: {versions}
Calls: {what}; declared in {module}.SCRIPT_CALLS (its batch call).
Calls the subject on request {request} (seed, subsequence, offset) of row {label} alone,
then in a batch of {size} copies of the row at slot {slot} (each other slot a request of its
own), and with --sizes all at each batch size the check ran; reproduced when a batch
changes the request's token. The check's batch held other rows in the other slots: a
token that depends on those alone is not reproduced here (samplecheck replay runs it).
Needs the subject's package, numpy and/or torch; nothing of samplecheck.

Run:  {run}  [--sizes recorded|all]
Exit status: 1 reproduced, 0 not reproduced, 2 it could not run (an import or the call failed).
Written by samplecheck_subject.repro_batch (docs/repro-format.md, "Standalone scripts").
"""
'''


def _int(record: dict[str, Any], name: str, low: int, high: int) -> int:
    value = rs.field(record, name, int)
    if isinstance(value, bool) or not low <= value < high:
        raise rs.RecordError(name, f"{value} is outside [{low}, {high})")
    return int(value)


def batch_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """The failing request, batch and row of a batch_invariance record."""
    if rs.field(record, "kind", str) != "sampler":
        raise rs.RecordError("kind", f"{record['kind']}: a matmul's batch_invariance is replayed, not scripted")
    if "row_data" not in rs.field(record, "evidence", dict):
        raise rs.RecordError(
            "evidence.row_data", "missing: a batch_invariance record written before records kept the request's row"
        )
    words = [_int(record, f"evidence.{w}", 0, 1 << 64) for w in ("seed", "subsequence", "offset")]
    size = _int(record, "evidence.batch_size", 2, 1 << 20)
    sizes = rs.field(record, "evidence.batch_sizes", list)
    if not all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b < 1 << 20 for b in sizes):
        raise rs.RecordError("evidence.batch_sizes", "not a list of batch sizes")
    values = rs.decode(record, "values_f32")
    if not values or len(values) % 4:
        raise rs.RecordError("evidence.row_data.values_f32", f"{len(values)} bytes: not float32 values")
    params = rs.field(record, "evidence.params", dict)
    for name in rs.PARAMS:
        rs.field(record, f"evidence.params.{name}", (int, float))
    return {
        "request": tuple(words),
        "size": size,
        "slot": _int(record, "evidence.slot", 0, size),
        "sizes": sizes,
        "values": values,
        "label": rs.field(record, "evidence.row_data.label", str),
        "params": {k: params[k] for k in rs.PARAMS},
        "expected": rs.field(record, "evidence.expected", str),
        "actual": rs.field(record, "evidence.actual", str),
    }


def header(record: dict[str, Any], path: str, run: str, call: ScriptCall, module: str, b: dict[str, Any]) -> str:
    return HEADER.format(
        **rs.inert_fields(
            subject=record["subject"],
            dtype=f" [{record['dtype']}]" if record.get("dtype") else "",
            label=repr(b["label"]),
            record=os.path.abspath(path),
            verdict=record.get("verdict", "FAIL"),
            detail=record.get("detail", ""),
            versions=rs.versions(record, call),
            what=call.what,
            module=module,
            request=b["request"],
            size=b["size"],
            slot=b["slot"],
            run=run,
        )
    )


def batch_script_text(record: dict[str, Any], path: str, out: str) -> tuple[str, str]:
    """The whole script and how to run it, or RecordError naming the field that stops it."""
    b = batch_inputs(record)
    call, module = rs.script_call(record)
    if not call.batch:
        raise rs.RecordError("subject", f"{record['subject']} ({module}) declares no batch call (ScriptCall.batch)")
    run = call.run.format(script=out)
    constants = "\n".join(
        [
            f"SUBJECT = {record['subject']!r}",
            "CHECK = 'batch_invariance'",
            f"LABEL = {b['label']!r}",
            f"PARAMS = {b['params']!r}",
            f"DTYPE = {record.get('dtype') if record.get('dtype') in DTYPES else None!r}  # the row's dtype as sent",
            f"REQUEST = {b['request']!r}  # (seed, subsequence, offset)",
            f"BATCH_SIZE = {b['size']}  # the first batch size where the request's token differed",
            f"SLOT = {b['slot']}  # the request's slot in that batch",
            f"BATCH_SIZES = {b['sizes']!r}  # every batch size the check ran",
            f"EXPECTED = {b['expected']!r}  # the check's token of the request alone",
            f"ACTUAL = {b['actual']!r}  # and in its batch",
            f"# The request's row as sent (float32, V = {len(b['values']) // 4}): zlib, then base64.",
            f"ROW = {rs.packed(b['values'])}",
        ]
    )
    tail = [call.batch.strip() + "\n", repro_template.BATCH_MAIN]
    text = repro_template.assemble(header(record, path, run, call, module, b), call, run, (), constants, tail)
    return text, run
