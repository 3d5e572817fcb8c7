"""Standalone scripts of one request's failures in batches (samplecheck repro-script FILE.json).

batch_invariance, batch_reorder, per_request_seeds and run_to_run each fail on one request (row,
seed, subsequence, offset) that drew two tokens where its contract allows one: alone and in a
batch, at two positions of a batch, in two slots of a batch where every slot holds it, or in
two calls of one batch.
The script calls the subject as its adapter does (the adapter's ScriptCall.batch,
draw_requests) on those placements, every slot a copy of the request's row (each other slot
the check's request there where the record keeps the batch's requests, else a request of its
own, or the request itself where the check put it in every slot), prints
each token beside the check's, and exits 1 when they differ. The check's batches held other
rows in the other slots: a subject whose token depends on those (not on the batch's size, the
slot or, where the record keeps them, the batchmates' keys) is not reproduced here, and
samplecheck replay runs the recorded batches. batch_reorder's records keep no batch: its
script keys the other slots itself.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import repro_script as rs
from . import repro_template
from .descriptor import DTYPES
from .script_call import ScriptCall

HEADER = '''#!/usr/bin/env python3
"""Standalone reproduction: {subject}, check {check}{dtype}, row {label}.

Record: {record}
  {verdict}: {detail}
Upstream, as the record's environment names it: {versions}
Calls: {what}; declared in {module}.SCRIPT_CALLS (its batch call).
Calls the subject on request {request} (seed, subsequence, offset) of row {label} in the
placements its check compared ({placements}: batch size, slot, and "own" where each other
slot holds a request of its own, "same" where every slot holds this one, "recorded" where
each slot holds the check's request there), each batch of copies of the row; reproduced when
the request's tokens differ. The check's batches held other rows: a token that depends on
those alone is not reproduced here (samplecheck replay runs them).
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


def _pair(record: dict[str, Any], name: str, size: int) -> list[int]:
    """Two slots of a batch of `size` (evidence.positions, evidence.outputs)."""
    pair = rs.field(record, name, list)
    if len(pair) != 2 or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < size for s in pair):
        raise rs.RecordError(name, f"{pair!r} is not two slots of a batch of {size}")
    return pair


def placements(record: dict[str, Any]) -> tuple[list[tuple[int, int, str]], list[str], list[int] | None]:
    """The check's placements of the request (batch size, slot, kind), its tokens there as the
    record gives them, and (batch_invariance) every batch size the check ran. Kind "recorded":
    the check's batch as evidence.requests_u64 keeps it (batch_invariance, run_to_run)."""
    check = record["check"]
    size = _int(record, "evidence.batch_size", 2, 1 << 20)
    batch = "recorded" if "requests_u64" in record["evidence"] else "own"
    if check == "batch_invariance":
        sizes = rs.field(record, "evidence.batch_sizes", list)
        if not all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b < 1 << 20 for b in sizes):
            raise rs.RecordError("evidence.batch_sizes", "not a list of batch sizes")
        recorded = [rs.field(record, f"evidence.{w}", str) for w in ("expected", "actual")]
        return [(1, 0, "own"), (size, _int(record, "evidence.slot", 0, size), batch)], recorded, sizes
    if check == "run_to_run":  # one batch called `repeat` times: call 1's token, then call repeat's
        repeat = _int(record, "evidence.repeat", 2, 64)
        slot = _int(record, "evidence.slot", 0, size)
        recorded = [rs.field(record, f"evidence.{w}", str) for w in ("expected", "actual")]
        return [(size, slot, batch)] * repeat, [recorded[0], *[""] * (repeat - 2), recorded[1]], None
    kind, name = ("own", "evidence.positions") if check == "batch_reorder" else ("same", "evidence.outputs")
    tokens = rs.field(record, "evidence.tokens", list)
    if len(tokens) != 2 or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise rs.RecordError("evidence.tokens", f"{tokens!r} is not the two tokens the check saw")
    return [(size, slot, kind) for slot in _pair(record, name, size)], [f"token {t}" for t in tokens], None


def batch_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """The failing request, its placements and its row."""
    if rs.field(record, "kind", str) != "sampler":
        raise rs.RecordError("kind", f"{record['kind']}: a matmul's batch_invariance is replayed, not scripted")
    evidence = rs.field(record, "evidence", dict)
    if "row_data" not in evidence:
        raise rs.RecordError(
            "evidence.row_data", f"missing: a {record['check']} record written before records kept the request's row"
        )
    row = request_row(record)
    placed, recorded, sizes = placements(record)
    words = [_int(record, f"evidence.{w}", 0, 1 << 64) for w in ("seed", "subsequence", "offset")]
    if "sent_seed" in record["evidence"]:  # a batch_slot or request_keyed subject's: the seed it saw
        words[0] = _int(record, "evidence.sent_seed", 0, 1 << 64)
    return {
        "request": tuple(words),
        "placements": placed,
        "recorded": recorded,
        "sizes": sizes,
        "batch": recorded_batch(record, placed[-1], tuple(words)),
        **row,
    }


def recorded_batch(record: dict[str, Any], placement: tuple[int, int, str], request: tuple[int, ...]) -> bytes:
    """The check's batch (evidence.requests_u64: seed as sent, subsequence, offset a slot, little
    -endian u64), whose slot holds the request; b"" where the record keeps none."""
    size, slot, kind = placement
    if kind != "recorded":
        return b""
    words = rs.decode_field(record, "evidence.requests_u64")
    if len(words) != size * 24:
        raise rs.RecordError("evidence.requests_u64", f"{len(words)} bytes, not {size} requests of 3 words")
    at_slot = tuple(int(w) for w in np.frombuffer(words, "<u8")[3 * slot : 3 * slot + 3])
    if at_slot != request:
        raise rs.RecordError("evidence.requests_u64", f"slot {slot} holds {at_slot}, not the request {request}")
    return words


def request_row(record: dict[str, Any]) -> dict[str, Any]:
    """The requests' row as sent (float32 bytes), its label and its filter setting."""
    values = rs.decode(record, "values_f32")
    if not values or len(values) % 4:
        raise rs.RecordError("evidence.row_data.values_f32", f"{len(values)} bytes: not float32 values")
    params = rs.field(record, "evidence.params", dict)
    for name in rs.PARAMS:
        rs.field(record, f"evidence.params.{name}", (int, float))
    label = rs.field(record, "evidence.row_data.label", str)
    return {"values": values, "label": label, "params": {k: params[k] for k in rs.PARAMS}}


def header(record: dict[str, Any], path: str, run: str, call: ScriptCall, module: str, b: dict[str, Any]) -> str:
    return HEADER.format(
        **rs.common_fields(record, path, run, call, module, b["label"]),
        **rs.inert_fields(
            detail=record.get("detail", ""),
            request=b["request"],
            placements=", ".join(str(p) for p in b["placements"]),
        ),
    )


def request_script(
    record: dict[str, Any],
    path: str,
    out: str,
    inputs: dict[str, Any],
    header_of: Callable[..., str],
    constants: list[str],
    main: list[str],
    stdlib: tuple[str, ...] = (),
) -> tuple[str, str]:
    """A request script (this module's, repro_collision's) and how to run it: its header
    (header_of(record, path, run, call, module, inputs)), the constants every one starts with,
    then `constants`, the subject's batch call and `main`; RecordError where the subject declares
    no batch call."""
    call, module = rs.script_call(record)
    if not call.batch:
        raise rs.RecordError("subject", f"{record['subject']} ({module}) declares no batch call (ScriptCall.batch)")
    dtype = record.get("dtype") if record.get("dtype") in DTYPES else None
    head = [
        f"SUBJECT = {record['subject']!r}",
        f"CHECK = {record['check']!r}",
        f"LABEL = {inputs['label']!r}",
        f"PARAMS = {inputs['params']!r}",
        f"DTYPE = {dtype!r}  # the row's dtype as sent",
    ]
    run = call.run.format(script=out)
    text = repro_template.assemble(
        header_of(record, path, run, call, module, inputs),
        call,
        run,
        stdlib,
        "\n".join([*head, *constants]),
        [call.batch.strip() + "\n", *main],
    )
    return text, run


def batch_script_text(record: dict[str, Any], path: str, out: str) -> tuple[str, str]:
    """The whole script and how to run it, or RecordError naming the field that stops it."""
    b = batch_inputs(record)
    constants = [
        f"REQUEST = {b['request']!r}  # (seed as the subject was sent it, subsequence, offset)",
        f"PLACEMENTS = {b['placements']!r}  # (batch size, slot, kind) the check compared",
        f"RECORDED = {b['recorded']!r}  # the check's tokens there",
        f"BATCH_SIZES = {b['sizes']!r}  # every batch size the check ran (--sizes all)",
        "# The check's batch (kind recorded): each slot's (seed as sent, subsequence, offset), u64.",
        f"BATCH = {rs.packed(b['batch']) if b['batch'] else None}",
        f"# The request's row as sent (float32, V = {len(b['values']) // 4}): zlib, then base64.",
        f"ROW = {rs.packed(b['values'])}",
    ]
    return request_script(record, path, out, b, header, constants, [repro_template.BATCH_MAIN])
