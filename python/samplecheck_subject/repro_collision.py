"""Standalone scripts of the collision checks (samplecheck repro-script FILE.json).

offset_advancement, per_request_seeds (its statistical part) and parallel_samples draw pairs of
requests from one flat row and count the pairs that drew the same token: independent requests
collide with probability sum q^2, so a flood of equal pairs means two requests shared random
numbers, or that the draws crowd onto few tokens. The record keeps the row, the requests as
the subject was sent them (evidence.requests_u64: the pairs' first members, then their second
members), how the check split them into calls (evidence.calls) and the collision probability
the test assumed. The script calls the subject as its adapter does (ScriptCall.batch,
draw_requests) on each call's requests, counts the equal pairs and gives the exact binomial
upper tail P(X >= k); it exits 1 when that is below the record's decision_level.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import repro_script as rs
from . import repro_template
from .repro_batch import request_row, request_script
from .script_call import ScriptCall

HEADER = '''#!/usr/bin/env python3
"""Standalone reproduction: {subject}, check {check}{dtype}, row {label}.

Record: {record}
  {verdict}: {detail}
Upstream, as the record's environment names it: {versions}
Calls: {what}; declared in {module}.SCRIPT_CALLS (its batch call).
Draws the check's {pairs} pairs of requests (seed as the subject was sent it, subsequence,
offset) from row {label}, in the calls the check made ({calls} requests each), and counts
the pairs whose two tokens are equal: independent requests collide with probability
{collision_prob:.4g} (sum of q^2 over the row). Reproduced when the exact binomial upper
tail P(X >= equal pairs) is below the record's decision_level, {level:.3e}.
Needs the subject's package, numpy and/or torch; nothing of samplecheck.

Run:  {run}
Exit status: 1 reproduced, 0 not reproduced, 2 it could not run (an import or the call failed).
Written by samplecheck_subject.repro_collision (docs/repro-format.md, "Standalone scripts").
"""
'''

MAIN = '''

def unpack(text, dtype):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


def upper_tail(k, n, p):
    """P(X >= k), X ~ Binomial(n, p): the regularized incomplete beta I_p(k, n - k + 1)."""
    return 1.0 if k <= 0 else betainc(k, n - k + 1, p)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="where the subject runs (default: its own choice)")
    args = parser.parse_args()
    row = unpack(ROW, "<f4").copy()
    words = unpack(REQUESTS, "<u8").reshape(-1, 3)
    requests = [tuple(int(w) for w in r) for r in words]
    print(f"{SUBJECT}, check {CHECK}, row {LABEL!r} (V = {row.size}, {PARAMS}): {PAIRS} pairs in calls of {CALLS}")
    tokens, start = [], 0
    try:
        for size in CALLS:  # the call may write its logits: a copy each
            tokens.append(np.asarray(draw_requests(row.copy(), PARAMS, requests[start : start + size], args.device)))
            start += size
    except Exception:  # noqa: BLE001 - the call could not run here: no verdict either way (Python's own exit is 1)
        traceback.print_exc()
        print("the call failed: exit 2, neither reproduced nor not", file=sys.stderr)
        return 2
    tokens = np.concatenate(tokens).astype(np.int64)
    equal = int((tokens[:PAIRS] == tokens[PAIRS:]).sum())
    p = upper_tail(equal, PAIRS, COLLISION_PROB)
    most = np.bincount(tokens, minlength=row.size)
    top = [t for t in np.argsort(-most, kind="stable")[:3] if most[t]]
    print(f"{equal} equal pairs of {PAIRS} (expected {PAIRS * COLLISION_PROB:.4g}; the check's: {RECORDED}); "
          f"most drawn: " + ", ".join(f"token {t} {most[t]} times" for t in top) + f" of {tokens.size}")
    return verdict(p, f"P(X >= {equal})")


if __name__ == "__main__":
    sys.exit(main())
'''


def requests_of(record: dict[str, Any], pairs: int) -> tuple[bytes, list[int]]:
    """The requests' words (2 x pairs x 3 little-endian u64) and the calls' sizes."""
    words = rs.decode_field(record, "evidence.requests_u64")
    if len(words) != 2 * pairs * 24:
        raise rs.RecordError("evidence.requests_u64", f"{len(words)} bytes, not 2 x {pairs} requests of 3 words")
    calls = rs.field(record, "evidence.calls", list)
    if not calls or not all(isinstance(c, int) and not isinstance(c, bool) and c > 0 for c in calls):
        raise rs.RecordError("evidence.calls", f"{calls!r} is not the calls' sizes")
    if sum(calls) != 2 * pairs:
        raise rs.RecordError("evidence.calls", f"{calls!r} does not add up to the 2 x {pairs} requests")
    return words, calls


def collision_inputs(record: dict[str, Any]) -> dict[str, Any]:
    """The row, the requests, the calls and the verdict's numbers, or RecordError naming the field."""
    if rs.field(record, "kind", str) != "sampler":
        raise rs.RecordError("kind", f"{record['kind']}: only sampler checks draw pairs")
    if "requests_u64" not in rs.field(record, "evidence", dict):
        raise rs.RecordError(
            "evidence.requests_u64",
            f"missing: a {record['check']} record written before collision records kept their requests; "
            "samplecheck replay runs it",
        )
    pairs = rs.field(record, "evidence.pairs", int)
    if not 0 < pairs <= 1 << 20:
        raise rs.RecordError("evidence.pairs", f"{pairs} is outside (0, 2^20]")
    words, calls = requests_of(record, pairs)
    prob = rs.field(record, "evidence.collision_prob", (int, float))
    level = rs.field(record, "decision_level", (int, float))
    for name, value in (("evidence.collision_prob", prob), ("decision_level", level)):
        if not 0 < value <= (1 if name.startswith("evidence") else 0.5):
            raise rs.RecordError(name, f"{value} is outside its range")
    collisions = record["evidence"].get("collisions")
    return {
        "pairs": pairs,
        "words": words,
        "calls": calls,
        "prob": float(prob),
        "level": float(level),
        **request_row(record),
        "recorded": f"{collisions} equal pairs" if isinstance(collisions, int) else "not recorded",
    }


def header(record: dict[str, Any], path: str, run: str, call: ScriptCall, module: str, c: dict[str, Any]) -> str:
    return HEADER.format(
        **rs.common_fields(record, path, run, call, module, c["label"]),
        **rs.inert_fields(detail=record.get("detail", ""), calls=c["calls"]),
        pairs=c["pairs"],
        collision_prob=c["prob"],
        level=c["level"],
    )


def collision_script_text(record: dict[str, Any], path: str, out: str) -> tuple[str, str]:
    """The whole script and how to run it, or RecordError naming the field that stops it."""
    c = collision_inputs(record)
    constants = [
        f"PAIRS = {c['pairs']}",
        f"CALLS = {c['calls']!r}  # the check's calls, requests each, in order",
        f"COLLISION_PROB = {c['prob']!r}  # sum of q^2: independent requests' chance of one token",
        f"LEVEL = {c['level']!r}  # the record's decision_level",
        f"RECORDED = {c['recorded']!r}",
        f"# The row as sent (float32, V = {len(c['values']) // 4}), then the requests: zlib, then base64.",
        f"ROW = {rs.packed(c['values'])}",
        f"REQUESTS = {rs.packed(np.frombuffer(c['words'], '<u8').tobytes())}",
    ]
    return request_script(record, path, out, c, header, constants, [repro_template.MATH, MAIN], ("math",))
