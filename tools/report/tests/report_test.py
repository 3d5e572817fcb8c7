#!/usr/bin/env python3
"""--report-dir end to end (ctest samplecheck_report_dir, label cpu): samplecheck writes
report.json valid against docs/report-schema.json, a junit.xml that parses with one
testcase per check, and report.html with its plots, for qualify (a sampler mutant and
a matmul mutant), mutants, calibrate and fingerprint --compare. Progress on stderr
changes no sample plan.

    report_test.py SAMPLECHECK SCHEMA WORK_DIR
"""

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import jsonschema

SAMPLECHECK, SCHEMA, WORK = sys.argv[1:4]
failures = []


def expect(condition, what):
    if not condition:
        failures.append(what)
        print("FAILED:", what, file=sys.stderr)


def run(name, args, want_exit):
    out = os.path.join(WORK, name)
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run([SAMPLECHECK, *args, "--report-dir", out], capture_output=True, text=True, timeout=600)
    expect(p.returncode == want_exit, f"{name}: exit {p.returncode}, expected {want_exit}\n{p.stdout}\n{p.stderr}")
    return out, p


def schema():
    with open(SCHEMA, encoding="utf-8") as f:
        return json.load(f)


def validated(out):
    with open(os.path.join(out, "report.json"), encoding="utf-8") as f:
        report = json.load(f)
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.path))
    for e in errors[:5]:
        print(f"{out}: {list(e.path)}: {e.message}", file=sys.stderr)
    expect(not errors, f"{out}/report.json does not validate against the schema")
    return report


def junit(out):
    return ET.parse(os.path.join(out, "junit.xml")).getroot()


def html_with_plots(out, plots):
    with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
        page = f.read()
    expect(page.count("<svg") >= plots, f"{out}/report.html has {page.count('<svg')} plots, expected at least {plots}")
    # Offline: nothing to fetch (XML namespaces are names, not fetches).
    expect(
        not re.search(r'(src|href)="https?:|<script|<link|@import', page),
        f"{out}: the page loads something from outside",
    )


def check_junit_matches(report, root):
    cases = root.findall("./testsuite/testcase")
    rows = [c for r in report["runs"] for c in r["checks"]]
    expect(len(cases) == len(rows), f"junit: {len(cases)} testcases for {len(rows)} checks")
    for case, row in zip(cases, rows):
        failed = case.find("failure") is not None
        skipped = case.find("skipped") is not None
        name = case.get("name")
        expect(failed == (row["verdict"] in ("FAIL", "TIMEOUT")), f"junit {name}: failure")
        expect(skipped == (row["verdict"] in ("n/a", "skipped")), f"junit {name}: skipped")
        if failed:
            expect(
                case.find("failure").get("message").endswith(row["detail"]),
                f"junit {case.get('name')}: the failure names the detail line",
            )


os.makedirs(WORK, exist_ok=True)

# A sampler mutant that goodness_of_fit kills (S07: drops the top-p boundary token).
sampler = ["qualify", "--subject", "cpu.sort_filter:S07", "--checks", "goodness_of_fit,tail"]
out, quiet = run("sampler", [*sampler, "--quiet"], 1)
report = validated(out)
check_junit_matches(report, junit(out))
fits = [c for c in report["runs"][0]["checks"] if "fit" in c["evidence"]]
expect(fits and all(c["verdict"] == "FAIL" for c in fits), "goodness_of_fit carries its counts")
expect(any(t["deviating"] for c in fits for t in c["evidence"]["fit"]["tokens"]), "the deviating tokens are named")
expect(quiet.stderr == "" or "renderer" in quiet.stderr, "--quiet: no progress")
html_with_plots(out, 3)

# The same run with progress (stderr is not a terminal: a line per check) gives the same
# numbers: progress only reads the runner's events.
out2, loud = run("sampler_progress", sampler, 1)
rows = len(report["runs"][0]["checks"])
expect(
    loud.stderr.count("samplecheck: [") == rows and f"[{rows}/{rows}]" in loud.stderr,
    f"a progress line per check:\n{loud.stderr}",
)
again = validated(out2)


def key(r):
    return [
        (c["check"], c["dtype"], c["p_value"], c["samples"], c["evidence"].get("fit")) for c in r["runs"][0]["checks"]
    ]


expect(key(report) == key(again), "progress changed the sample plan or the numbers")

# A tie mutant (S03: the boundary's ties always go to the lower id): each dtype's ties
# check carries its worst groups against the even split, and the page plots them.
out, _ = run("ties", ["qualify", "--subject", "cpu.dual_pivot:S03", "--checks", "ties", "-q"], 1)
report = validated(out)
ties = report["runs"][0]["checks"]
for c in ties:
    e = c["evidence"]
    expect(
        c["verdict"] == "FAIL" and 0 < len(e["tie_groups"]) == min(8, e["tie_groups_judged"]),
        f"ties [{c['dtype']}]: {len(e['tie_groups'])} of {e['tie_groups_judged']} groups",
    )
    ps = [g["p_value"] for g in e["tie_groups"]]
    expect(ps == sorted(ps) and ps[0] <= e["tie_level"], "the failing group comes first")
    expect(all(sum(x["observed"] for x in g["cells"]) > 0 for g in e["tie_groups"]), "every plotted group has draws")
with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
    expect(f.read().count(": tie groups") == len(ties), "a tie-groups plot per dtype")

# A matmul mutant: the divergence map names M and the columns.
out, _ = run(
    "matmul",
    [
        "qualify",
        "--subject",
        "cpu.segmented:B01",
        "--checks",
        "batch_invariance",
        "--m",
        "1,2,1024,1025",
        "--shape",
        "6144x4096",
        "-q",
    ],
    1,
)
report = validated(out)
check_junit_matches(report, junit(out))
maps = report["runs"][0]["checks"][0]["evidence"]["divergence"]
expect([d["m"] for d in maps] == [1025], f"divergence map: {[d['m'] for d in maps]}")
html_with_plots(out, 1)

# mutants: a testcase per mutant; calibrate: failed runs and each check's uniformity.
out, _ = run("mutants", ["mutants", "--subjects-prefix", "cpu.dual_pivot:S0", "--named-only", "-q"], 0)
report = validated(out)
expect(len(junit(out).findall("./testsuite/testcase")) == len(report["mutants"]) >= 3, "junit: a testcase per mutant")
html_with_plots(out, 1)
out, _ = run(
    "calibrate", ["calibrate", "--subject", "cpu.multinomial", "--runs", "3", "--checks", "tail", "--no-fork", "-q"], 0
)
report = validated(out)
expect(len(report["calibration"][0]["checks"][0]["p_values"]) == 3, "calibration p-values")
html_with_plots(out, 1)


# fingerprint --compare: identical, differ (B01 splits K above M = 64: the first divergence
# at M = 65, the count, one failed testcase) and incomparable (exit 2, an error testcase).
def fingerprint(name, args):
    p = subprocess.run(
        [SAMPLECHECK, "fingerprint", *args, "-o", os.path.join(WORK, name)], capture_output=True, text=True, timeout=300
    )
    expect(p.returncode == 0, f"fingerprint {name}: exit {p.returncode}\n{p.stderr}")
    return os.path.join(WORK, name)


plan = ["--shape", "4096x4096", "--m", "1,2,64,65", "--columns", "256"]
a = fingerprint("a.json", ["--subject", "cpu.segmented", *plan])
b01 = fingerprint("b01.json", ["--subject", "cpu.segmented:B01", *plan])
other = fingerprint(
    "other.json", ["--subject", "cpu.segmented", "--shape", "4096x4096", "--m", "1,2", "--columns", "256"]
)
outcomes = {}
for name, b, want, verdict in (
    ("same", a, 0, "identical"),
    ("differ", b01, 1, "differ"),
    ("incomparable", other, 2, "incomparable"),
):
    out, _ = run(f"compare_{name}", ["fingerprint", "--compare", a, b], want)
    report = validated(out)
    cmp = report["comparison"]
    expect(
        cmp["verdict"] == verdict and report["exit_status"] == want,
        f"compare {name}: verdict {cmp['verdict']}, exit_status {report['exit_status']}",
    )
    cases = junit(out).findall("./testsuite/testcase")
    expect(len(cases) == 1, f"compare {name}: {len(cases)} testcases, want 1")
    outcomes[name] = [child.tag for child in cases[0]] if cases else None
    if name == "differ":
        first = cmp["first_divergence"]
        expect(
            cmp["differing_count"] == 2 and first["size"] == 65 and first["detail"] and "ULP" in first["detail"],
            f"compare differ: count {cmp['differing_count']}, first {first}",
        )
        expect(
            cases[0].find("failure").get("message").startswith("DIFFER: 2 of 8 entries"),
            "compare differ: the failure names the count",
        )
        html_with_plots(out, 1)
    if name == "incomparable":
        expect("batch_sizes" in cmp["why_not"], f"compare incomparable: {cmp['why_not']}")
expect(
    outcomes == {"same": [], "differ": ["failure"], "incomparable": ["error"]}, f"compare junit outcomes: {outcomes}"
)
bad_cmp = json.loads(json.dumps(report))
bad_cmp["comparison"].update(verdict="differ", first_divergence=None)
expect(
    not jsonschema.Draft202012Validator(schema()).is_valid(bad_cmp),
    "the schema accepts a difference without its first divergence",
)

# A report the schema must refuse: the schema is not vacuous.
bad = dict(report, version=2)
expect(not jsonschema.Draft202012Validator(schema()).is_valid(bad), "the schema accepts version 2")

print("report_test:", "FAILED" if failures else "passed", f"({len(failures)} failures)")
sys.exit(1 if failures else 0)
