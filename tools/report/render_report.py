#!/usr/bin/env python3
"""Renders a samplecheck report.json (docs/report-schema.json) to one self-contained
report.html: the table, the detail lines and, where a person would rather look than
read, plots drawn by matplotlib as inline SVG (no script, no network, opens offline).

    python3 tools/report/render_report.py DIR/report.json DIR/report.html

samplecheck --report-dir runs it itself; run it by hand to re-render a report.
"""

import json
import shlex
import sys

from report_plots import (
    check_name,
    comparison_plot,
    divergence_plot,
    esc,
    failed,
    fit_plot,
    fmt_p,
    kill_matrix_plot,
    p_value_plot,
    qq_plot,
    tail_plot,
    ties_plot,
)

SUPPORTED_VERSION = 1


# ----------------------------------------------------------------------------- page


def table(run):
    head = (
        "<tr><th>check</th><th>verdict</th><th>p-value</th><th>alpha share</th>"
        "<th>power (0.99)</th><th>samples</th><th>time</th></tr>"
    )
    rows = []
    for c in run["checks"]:
        na = c["verdict"] == "n/a"
        p = fmt_p(c.get("p_value")) or ("" if na else "exact")
        cls = "fail" if failed(c) or c["verdict"] == "ERROR" else ("muted" if na else "pass")
        rows.append(
            f'<tr class="{cls}"><td>{esc(check_name(c))}</td><td>{esc(c["verdict"])}</td>'
            f"<td>{p}</td><td>{fmt_p(c.get('alpha_share'), 1)}</td>"
            f"<td>{esc(c['power'])}</td><td>{'' if na else c['samples']}</td>"
            f"<td>{'' if na else format(c['seconds'], '.2f') + ' s'}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


SHOWN_DETAIL = 1024  # bytes of a detail the page shows: suites/battery/runner.h kShownDetail


def shown_detail(text: str) -> str:
    """The detail cut as the terminal table cuts it; report.json keeps it whole."""
    raw = text.encode("utf-8")
    if len(raw) <= SHOWN_DETAIL:
        return text
    head = raw[:SHOWN_DETAIL].decode("utf-8", errors="ignore")
    return f"{head} ... ({len(raw) - len(head.encode('utf-8'))} more bytes in the report's record)"


def details(run):
    items = []
    for c in run["checks"]:
        if c["verdict"] == "pass" or not c["detail"]:
            continue
        repro = f"<br><code>samplecheck replay {esc(c['repro_path'])}</code>" if c.get("repro_path") else ""
        items.append(
            f"<li><b>{esc(check_name(c))} [{esc(c['verdict'])}]</b>: {esc(shown_detail(c['detail']))}{repro}</li>"
        )
    return f'<ul class="details">{"".join(items)}</ul>' if items else ""


def run_plots(run, failures_only=False):
    plots = []
    for c in run["checks"]:
        e = c.get("evidence") or {}
        if failures_only and not failed(c):
            continue
        if "fit" in e and e["fit"].get("tokens"):
            plots.append(fit_plot(c))
        if e.get("tail_rows"):
            plots.append(tail_plot(c))
        if e.get("tie_groups"):
            plots.append(ties_plot(c))
        if e.get("divergence"):
            plots.append(divergence_plot(c))
    return "".join(plots)


def run_section(run, failures_only=False):
    plugin = f" (plugin {esc(run['plugin'])})" if run.get("plugin") else ""
    verdict = run["verdict"]
    return (
        f'<section><h2><span class="badge badge-{verdict.lower()}">{esc(verdict)}</span> '
        f"{esc(run['subject'])} <small>{esc(run['kind'])}{plugin}</small></h2>"
        f'<p class="muted">budget {esc(run["budget"])}, seed {run["seed"]}, alpha '
        f"{run['alpha']:g} (Holm over the statistical checks), {run['samples']} samples in "
        f"{run['seconds']:.1f} s</p>{subject_facts(run)}{table(run)}{details(run)}"
        f'<div class="plots">{p_value_plot(run) if not failures_only else ""}'
        f"{run_plots(run, failures_only)}</div></section>"
    )


def subject_facts(run):
    """The declared contracts, the subject process's own versions and the platform."""
    d = run.get("descriptor") or {}
    keys = (
        "rng_policy",
        "parameter_indexing",
        "degenerate_rows",
        "probs_normalisation",
        "uniform_rule",
        "inputs",
        "tie_policy",
        "filter_order",
    )
    contracts = ", ".join(f"{k} {d[k]}" for k in keys if k in d)
    env = run.get("environment") or {}
    packages = (env.get("packages") or {}).items()
    # A shipped package's wheel and files that ran carry sha256s (samplecheck_subject.shipped):
    # a line of their own, so the versions stay readable.
    versions = ", ".join(
        ([f"Python {env['python']}"] if "python" in env else [])
        + [f"{n} {v}" for n, v in packages if "sha256:" not in v]
    )
    shipped = ", ".join(f"{n} {v}" for n, v in packages if "sha256:" in v)
    platform = ", ".join(f"{k} {v}" for k, v in (run.get("platform") or {}).items())
    facts = (("declares", contracts), ("runs on", versions), ("shipped code that ran", shipped), ("platform", platform))
    lines = [(label, text) for label, text in facts if text]
    return "".join(f'<p class="muted">{label}: {esc(text)}</p>' for label, text in lines)


def mutants_page(report):
    survivors = [m for m in report["mutants"] if not m["killed"] and not m["unavailable"] and m.get("judged", True)]
    parts = [kill_matrix_plot(report)]
    if survivors:
        names = ", ".join(esc(m["subject"]) for m in survivors)
        parts.append(f'<p class="fail">Survivors: {names}</p>')
    word = {
        m["subject"]: (
            "skipped (no device)"
            if m["unavailable"]
            else f"not judged ({m['named_check']} did not run)"
            if not m.get("judged", True)
            else f"{'KILLED' if m['killed'] else 'SURVIVED'} by {m['named_check']}"
        )
        for m in report["mutants"]
    }
    runs = "".join(
        f"<details><summary>{esc(r['subject'])}: {esc(word.get(r['subject'], ''))}"
        f"</summary>{run_section(r, failures_only=True)}</details>"
        for r in report["runs"]
    )
    return "".join(parts) + runs


def calibration_page(report):
    parts = []
    for s in report["calibration"]:
        rows = "".join(
            f"<tr><td>{esc(c['check'])}</td><td>{len(c['p_values'])}</td>"
            f"<td>{c['false_alarms']} ({c['expected_false_alarms']:.2g})</td>"
            f"<td>{c['ks_distance']:.4f}</td><td>{c['ks_p']:.3g}</td>"
            f"<td>{c['ks_lower_distance']:.4f}</td><td>{c['ks_lower_p']:.3g}</td>"
            f"<td>{c['ad_p']:.3g}</td><td>{c['median']:.3f}</td></tr>"
            for c in s["checks"]
        )
        parts.append(
            f"<section><h2>{esc(s['subject'])}</h2><p>{s['runs']} runs with fresh seeds, alpha "
            f"{s['alpha']:g}: {s['failed_runs']} failed (P(X &ge; {s['failed_runs']}) = "
            f"{s['failure_p_value']:.3g})</p><table><tr><th>check</th><th>n</th>"
            f"<th>false alarms (expected)</th><th>KS D</th><th>KS p</th><th>D-</th><th>D- p</th>"
            f"<th>Anderson-Darling p</th><th>median p</th></tr>{rows}</table>"
            f'<div class="plots">{qq_plot(s)}</div></section>'
        )
    return "".join(parts)


def comparison_page(report):
    cmp = report["comparison"]
    verdict = cmp["verdict"]
    sides = "".join(
        f"<tr><td>{label}</td><td><code>{esc(side['path'])}</code></td>"
        f"<td>{esc(side['subject'])}</td><td><code>{esc(side['hash'])}</code></td>"
        f"<td>{side['entries']}</td><td>{esc(json.dumps(side['platform']))}</td></tr>"
        for label, side in (("A", cmp["a"]), ("B", cmp["b"]))
    )
    parts = [
        f"<table><tr><th></th><th>manifest</th><th>subject</th><th>hash</th>"
        f"<th>entries</th><th>platform</th></tr>{sides}</table>"
    ]
    if verdict == "incomparable":
        parts.append(f'<p class="fail">Incomparable: {esc(cmp["why_not"])}</p>')
    elif verdict == "identical":
        parts.append(f"<p>Identical: all {cmp['entries']} entries have the same hash.</p>")
    else:
        first = cmp["first_divergence"]
        detail = f"<br>first differing element: <code>{esc(first['detail'])}</code>" if first.get("detail") else ""
        parts.append(
            f'<p class="fail">{cmp["differing_count"]} of {cmp["entries"]} entries '
            f"differ; first divergence: {esc(first['name'])} "
            f"(<code>{esc(first['hash_a'])}</code> vs "
            f"<code>{esc(first['hash_b'])}</code>){detail}</p>"
        )
        parts.append(f'<div class="plots">{comparison_plot(cmp)}</div>')
        rows = "".join(
            f"<tr><td>{d['index']}</td><td>{esc(d['name'])}</td>"
            f"<td><code>{esc(d['hash_a'])}</code></td>"
            f"<td><code>{esc(d['hash_b'])}</code></td></tr>"
            for d in cmp["differing"]
        )
        listed = len(cmp["differing"])
        parts.append(
            f"<details><summary>the differing entries ({listed} listed of "
            f"{cmp['differing_count']})</summary><table><tr><th>entry</th><th>what</th>"
            f"<th>hash A</th><th>hash B</th></tr>{rows}</table></details>"
        )
    return "<section>" + "".join(parts) + "</section>"


STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1100px;
color:#212121;padding:0 16px}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px} small{color:#757575;
font-weight:normal} code{font-size:12px;background:#f5f5f5;padding:1px 4px}
table{border-collapse:collapse;font-size:13px;margin:8px 0} td,th{padding:3px 10px;
border-bottom:1px solid #eee;text-align:left} th{background:#fafafa}
tr.fail td{color:#c62828;font-weight:600} tr.muted td{color:#9e9e9e}
.badge{display:inline-block;padding:2px 8px;border-radius:4px;color:#fff;font-size:13px}
.badge-pass{background:#2e7d32} .badge-fail{background:#c62828} .badge-skipped{background:#9e9e9e}
.muted{color:#757575;font-size:13px} .fail{color:#c62828}
ul.details{font-size:13px} ul.details li{margin:4px 0}
.plots{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}
figure{margin:8px 0;border:1px solid #eee;border-radius:6px;padding:10px;flex:1 1 460px;
max-width:100%;box-sizing:border-box} figure.wide{flex-basis:100%}
figcaption{font-size:13px;margin-bottom:6px} .plot svg{max-width:100%;height:auto}
details{margin:6px 0} summary{cursor:pointer;font-size:14px}
"""


def render(report):
    if report.get("format") != "samplecheck-report":
        raise SystemExit("render_report: not a samplecheck report (format field)")
    if report.get("version") != SUPPORTED_VERSION:
        raise SystemExit(
            f"render_report: report version {report.get('version')}; this renderer reads version {SUPPORTED_VERSION}"
        )
    command = report["command"]
    if command == "mutants":
        body = mutants_page(report)
    elif command == "calibrate":
        body = calibration_page(report)
    elif command == "fingerprint":
        body = comparison_page(report)
    else:
        body = "".join(run_section(r) for r in report["runs"])
    status = report["exit_status"]
    word = {0: "PASS", 1: "FAIL", 77: "SKIPPED"}.get(status, f"exit {status}")
    if command == "fingerprint":
        word = report["comparison"]["verdict"].upper()
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>samplecheck {esc(command)}: {word}</title><style>{STYLE}</style></head><body>"
        f'<h1>samplecheck {esc(command)}: <span class="{"fail" if status == 1 else ""}">'
        f'{word}</span></h1><p class="muted"><code>{esc(shlex.join(report["command_line"]))}'
        f"</code> exited {status}{provenance(report)}</p>{body}</body></html>\n"
    )


def provenance(report):
    """Which samplecheck wrote the report, where and when (absent from older reports)."""
    tool = report.get("samplecheck")
    words = (
        [
            f"samplecheck {tool['version']} (revision {tool['revision']}, plugin ABI "
            f"{tool['plugin_abi']}, protocol {tool['protocol']})"
        ]
        if tool
        else []
    )
    words += [report[k] for k in ("hostname", "timestamp") if report.get(k)]
    return "; " + esc(", ".join(words)) if words else ""


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    page = render(report)
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
