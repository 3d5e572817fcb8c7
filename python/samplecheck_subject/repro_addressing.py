"""Where a keyed subject's standalone script draws a failed check's row (repro_script): the
check's stream seed and the row's first subsequence, draw i of the row being the request
(seed, first + i, offset 0), as the record says them (docs/repro-format.md, "Standalone
scripts").

The C++ checks write the row's first request into the record (evidence.first_subsequence), the
one rule read here. Records written before they did stay version 1 (records are data users
keep) and are read by the derivation those records allow: _addressing_of_older_record.
"""

from __future__ import annotations

from typing import Any


def addressing(record: dict[str, Any]) -> tuple[int | None, int | None]:
    """(the check's stream seed, the row's first subsequence): draw i of the row was the request
    (seed, first + i, offset 0); (None, None) where the record does not say. One rule: the
    record's evidence.first_subsequence, which a check writes wherever a keyed script can draw
    its row's requests; a record without it is read by _addressing_of_older_record."""
    evidence = record["evidence"]
    seed = evidence.get("seed", evidence.get("check_seed"))
    if not _word(seed):
        return None, None
    if "first_subsequence" not in evidence:
        return _addressing_of_older_record(record, seed)
    first = evidence["first_subsequence"]
    return (seed, first) if _word(first) else (None, None)


def _word(value: object) -> bool:
    """A 64-bit unsigned word, as the record's seeds and subsequences are (a bool is none)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 64


def _addressing_of_older_record(record: dict[str, Any], seed: int) -> tuple[int | None, int | None]:
    """The row's first subsequence of a record without first_subsequence (written before the
    checks kept it; version 1 still, as records are data users keep), derived as those records
    allow, and only for them. A record written since without it (a tie group's bucket whose row
    took several routes) reads (None, None) here too, as its older form did."""
    evidence, check = record["evidence"], record["check"]
    if check == "parameter_routing":  # the one output that drew OUT: (seed, subsequence r)
        r = evidence.get("subsequence")
        return (seed, r) if _word(r) else (None, None)
    if check == "ties" and "token" not in evidence:
        return None, None  # a tie group's row: first_subsequence was its only address
    per_row = evidence.get("draws_per_row")
    index = evidence["row_data"].get("index")
    if not isinstance(per_row, list) or not isinstance(index, int) or index < 0:
        return None, None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in per_row):
        return None, None
    # One subsequence per draw, row after row from 0; ties drew its tied rows so too: an OUT
    # token's row is a tied one (the flat copies, drawn after them, are unfiltered: none is OUT).
    addressed = check in ("support", "goodness_of_fit", "tail") or (check == "ties" and "token" in evidence)
    if not addressed or index >= len(per_row):
        return None, None
    return seed, sum(per_row[:index])
