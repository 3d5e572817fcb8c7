"""Judges a samplecheck report against the verdicts a test expects.

    expect_verdicts.py REPORT_JSON [CHECK=VERDICT~TEXT ...]

Every check named on the command line must have that verdict (FAIL, TIMEOUT, n/a, pass),
and, after `~`, a detail that contains TEXT; every other check must pass or be n/a. A
known failure of a real subject (docs/shipped/llamacpp.md explains each) is pinned this way:
the test fails when it goes away as well as when anything else fails, so the table and the
code cannot drift apart. A report with no check in it fails.
"""

import json
import sys


def parse_expectations(args):
    expected = {}
    for arg in args:
        check, _, rest = arg.partition("=")
        verdict, _, text = rest.partition("~")
        if not check or not verdict:
            sys.exit(f"expect_verdicts.py: '{arg}' is not CHECK=VERDICT[~TEXT]")
        expected[check] = (verdict, text)
    return expected


def judge(checks, expected):
    """Lines of what was wrong."""
    wrong, seen = [], set()
    for c in checks:
        name, verdict, detail = c["check"], c["verdict"], c.get("detail") or ""
        seen.add(name)
        label = f"{name} [{c.get('dtype', '')}]"
        if name in expected:
            want, text = expected[name]
            if verdict != want or text not in detail:
                wrong.append(f"{label}: {verdict} ({detail}); expected {want} with '{text}'")
        elif verdict not in ("pass", "n/a"):
            wrong.append(f"{label}: {verdict} ({detail}); expected pass or n/a")
    for name in sorted(set(expected) - seen):
        wrong.append(f"{name}: not in the report; expected {expected[name][0]}")
    return wrong


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        with open(sys.argv[1]) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"expect_verdicts.py: no report to judge: {e}")
        return 1
    checks = [c for run in report.get("runs", []) for c in run.get("checks", [])]
    wrong = judge(checks, parse_expectations(sys.argv[2:]))
    if not checks:
        wrong.append("the report holds no check")
    for line in wrong:
        print(f"unexpected: {line}")
    print(f"{len(checks) - len(wrong)} of {len(checks)} check verdicts as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
