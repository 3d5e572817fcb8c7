"""One line per check and a table per run from the report.json files under a folder.

Used by h200_queue.sh: `python3 h200_summarize.py OUT` reads OUT/r-*/report.json.
"""

import glob
import json
import os
import sys
from typing import Any

STOPPED = ("FAIL", "TIMEOUT", "ERROR")


def run_row(run: dict[str, Any]) -> str:
    checks = run["checks"]
    subject_s = sum(c.get("subject_seconds", 0) for c in checks)
    judge_s = sum(c.get("judge_seconds", 0) for c in checks)
    fails = [f"{c['check']}[{c['dtype']}] p={c['p_value']}" for c in checks if c["verdict"] in STOPPED]
    powers = sorted({c["power"] for c in checks if c["check"] == "goodness_of_fit"})
    share = judge_s / run["seconds"] if run["seconds"] else 0.0
    return (
        f"{run['subject']} | {run['seed']} | {run['verdict']} | {run['samples']:,} | {subject_s:.1f} | "
        f"{judge_s:.1f} | {run['seconds']:.1f} | {share:.0%} | {'; '.join(powers)} | {'; '.join(fails)}"
    )


def main(out: str) -> None:
    rows: list[str] = []
    for path in sorted(glob.glob(os.path.join(out, "r-*", "report.json"))):
        with open(path) as f:
            report = json.load(f)
        for run in report["runs"]:
            rows.append(run_row(run))
            for c in run["checks"]:
                if c["verdict"] != "n/a":
                    print(
                        f"  {run['subject']} {run['seed']} {c['check']}[{c['dtype']}] {c['verdict']} "
                        f"p={c['p_value']} n={c['samples']} subj={c.get('subject_seconds', 0):.2f} "
                        f"judge={c.get('judge_seconds', 0):.2f} power={c['power']}"
                    )
    print("subject | seed | verdict | samples | subject s | judge s | wall s | judge share | gof power | failures")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1])
