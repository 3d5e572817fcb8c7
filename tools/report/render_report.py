#!/usr/bin/env python3
"""Renders a samplecheck report.json (docs/report-schema.json) to one self-contained
report.html: the table, the detail lines and, where a person would rather look than
read, plots drawn by matplotlib as inline SVG (no script, no network, opens offline).

    python3 tools/report/render_report.py DIR/report.json DIR/report.html

samplecheck --report-dir runs it itself; run it by hand to re-render a report.
"""
import html
import io
import json
import math
import re
import shlex
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.colors import ListedColormap  # noqa: E402

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: small files, selectable labels
    "svg.hashsalt": "samplecheck",  # the same report renders to the same bytes
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
})

PASS, FAIL, MUTED, ACCENT = "#2e7d32", "#c62828", "#9e9e9e", "#1565c0"
SUPPORTED_VERSION = 1


def esc(text):
    return html.escape(str(text), quote=True)


def svg(fig):
    """The figure as an inline <svg> element."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buffer.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    return '<div class="plot">' + text + "</div>"


def figure(title, description, body, wide=False):
    return (f'<figure class="{"wide" if wide else ""}"><figcaption><b>{esc(title)}</b> '
            f"{esc(description)}</figcaption>{body}</figure>")


def check_name(c):
    return c["check"] + (f" [{c['dtype']}]" if c.get("dtype") else "")


def failed(c):
    return c["verdict"] in ("FAIL", "TIMEOUT")


def fmt_p(value, digits=2):
    return "" if value is None else f"{value:.{digits}e}"


# ----------------------------------------------------------------------------- plots


def p_value_plot(run):
    """Each statistical check's p-value against the Holm level it was compared with."""
    rows = [c for c in run["checks"] if c.get("p_value") is not None and c.get("alpha_share")]
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(7.5, 0.32 * len(rows) + 1.1))
    floor = 1e-300
    for y, c in enumerate(rows):
        p = max(c["p_value"], floor)
        colour = FAIL if failed(c) else PASS
        ax.plot([c["alpha_share"]], [y], marker="|", markersize=14, color="black", mew=2)
        ax.plot([p], [y], "o", color=colour, markersize=6)
        ax.annotate(f"p {c['p_value']:.1e}", (p, y), xytext=(6, 3), textcoords="offset points",
                    fontsize=7, color=colour)
    ax.set_yticks(range(len(rows)), [check_name(c) for c in rows])
    ax.set_xscale("log")
    lo = min(min(max(c["p_value"], floor) for c in rows), min(c["alpha_share"] for c in rows))
    ax.set_xlim(max(lo / 10, floor), 2)
    ax.invert_yaxis()
    ax.set_xlabel("p-value (dot) and the alpha share it was compared with (bar); "
                  "a dot left of its bar fails")
    return figure("p-values against their alpha shares",
                  f"(Holm over the run's alpha {run['alpha']:g}).", svg(fig), wide=True)


def fit_plot(c):
    """Observed against expected IN-conditional counts of the worst row."""
    fit = c["evidence"]["fit"]
    tokens = fit["tokens"]
    if not tokens:
        return ""
    fig, ax = plt.subplots(figsize=(max(5.0, 0.28 * len(tokens) + 2), 3.4))
    xs = range(len(tokens))
    expected = [t["expected"] for t in tokens]
    observed = [t["observed"] for t in tokens]
    ax.bar(xs, expected, color="#cfd8dc", label="expected count (n q)", width=0.8)
    for x, t in zip(xs, tokens):
        colour = FAIL if t["deviating"] else ACCENT
        ax.errorbar([x], [t["observed"]],
                    yerr=[[t["observed"] - t["lower"]], [t["upper"] - t["observed"]]],
                    fmt="o", color=colour, capsize=3, markersize=5)
    ax.plot([], [], "o", color=ACCENT, label="observed, Clopper-Pearson interval")
    ax.plot([], [], "o", color=FAIL, label="observed, deviating token")
    ax.set_xticks(list(xs), [str(t["token"]) for t in tokens], rotation=60, fontsize=7)
    ax.set_xlabel("token (most probable first, then the deviating ones)")
    ax.set_ylabel("draws")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    bad = [str(t["token"]) for t in tokens if t["deviating"]]
    rest = fit["rest"]
    return figure(
        f"{check_name(c)}: row '{fit['row']}'",
        f"{fit['in_draws']} draws on IN tokens; intervals at level {fit['token_level']:.1e} per "
        f"token. Tokens carrying the deviation: {', '.join(bad) if bad else 'none named'}. "
        f"Tokens not shown: {rest['observed']} draws, {rest['expected']:.1f} expected.", svg(fig))


def tail_plot(c):
    """Each tail row's expected and seen mass below the threshold."""
    rows = c["evidence"]["tail_rows"]
    fig, ax = plt.subplots(figsize=(6.5, 0.5 * len(rows) + 1.2))
    for y, r in enumerate(rows):
        seen = max(r["seen_mass"], 1e-12)
        colour = FAIL if failed(c) and r["p_value"] * len(rows) <= (c.get("alpha_share") or 0) \
            else ACCENT
        ax.plot([r["expected_mass"]], [y], marker="D", color="black", markersize=6)
        ax.errorbar([seen], [y], xerr=[[seen - max(r["seen_lower"], 1e-12)],
                                       [r["seen_upper"] - seen]],
                    fmt="o", color=colour, capsize=3)
        ax.annotate(f"{r['count']} of {r['draws']} draws, p {r['p_value']:.1e}", (seen, y),
                    xytext=(0, 8), textcoords="offset points", fontsize=7, ha="center")
    ax.plot([], [], "D", color="black", label="expected mass")
    ax.plot([], [], "o", color=ACCENT, label="seen fraction, Clopper-Pearson interval")
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [r["row"] for r in rows])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel(f"mass on the tokens below {rows[0]['threshold']:g}")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return figure(f"{check_name(c)}: tail mass", "expected against seen, per row.", svg(fig))


def divergence_plot(c):
    """The batch sizes that differ from M = 1 and where in the output they differ."""
    e = c["evidence"]
    entries = e["divergence"]
    tested = e.get("batch_sizes") or [d["m"] for d in entries]
    differing = {d["m"] for d in entries}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 4.8), sharex=True,
                                      gridspec_kw={"height_ratios": [1, 2]})
    same = [m for m in tested if m not in differing]
    top.vlines(same, 0, 1, color=MUTED, linewidth=0.8, label="bitwise equal to M = 1")
    top.vlines(sorted(differing), 0, 1, color=FAIL, linewidth=1.6, label="differs from M = 1")
    top.set_yticks([])
    top.set_ylabel("M tested")
    top.set_ylim(0, 1.25)
    top.legend(fontsize=7, loc="upper left", ncol=2, frameon=False)
    top.set_title(f"{len(differing)} of {len(tested)} batch sizes tested differ", fontsize=9)
    ms, columns, counts = [], [], []
    for d in entries:
        for start, count in d["column_bands"]:
            ms.append(d["m"])
            columns.append(start + d["band_width"] / 2)
            counts.append(count)
    points = bottom.scatter(ms, columns, c=counts, cmap="Reds", s=18, marker="s",
                            vmin=0, edgecolors="none")
    fig.colorbar(points, ax=[top, bottom], label="differing outputs in the column band", pad=0.01)
    bottom.set_ylim(0, e.get("columns") or max(columns) + 1)
    bottom.set_ylabel("output column")
    bottom.set_xscale("log", base=2)
    bottom.set_xlim(0.8, 4096 * 1.25)
    bottom.set_xticks([1, 4, 16, 64, 256, 1024, 4096], ["1", "4", "16", "64", "256", "1024",
                                                          "4096"])
    bottom.set_xlabel("batch size M")
    rows = "; ".join(f"M = {d['m']}: {d['outputs']} output(s) in {d['rows']} row(s) "
                     f"(batch rows {', '.join(map(str, d['batch_rows']))})" for d in entries[:6])
    more = f"; and {len(entries) - 6} more" if len(entries) > 6 else ""
    return figure(f"{check_name(c)}: {e.get('shape', '')} (k {e.get('k', '?')}, "
                  f"{'bias' if e.get('bias') else 'no bias'})",
                  f"where batch sizes differ from M = 1. {rows}{more}.", svg(fig), wide=True)


def qq_plot(summary):
    """Calibration: each check's sorted p-values against uniform quantiles."""
    checks = summary["checks"]
    if not checks:
        return ""
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for c in checks:
        p = sorted(c["p_values"])
        n = len(p)
        if n == 0:
            continue
        q = [(i + 0.5) / n for i in range(n)]
        label = f"{c['check']} (n {n}, D- {c['ks_lower_distance']:.3f})"
        ax.plot(q, p, ".", markersize=3, label=label)
    n = max(len(c["p_values"]) for c in checks)
    if n > 0:  # Massart's DKW band at 0.99: |F_n - F| <= sqrt(log(2 / 0.01) / (2 n))
        eps = math.sqrt(math.log(2 / 0.01) / (2 * n))
        ax.fill_between([0, 1], [-eps, 1 - eps], [eps, 1 + eps], color=MUTED, alpha=0.25,
                        label="99% DKW band")
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("uniform quantile")
    ax.set_ylabel("p-value")
    ax.legend(fontsize=7, loc="upper left")
    return figure(f"calibration of {summary['subject']}: p-values' QQ plot",
                  "under the null every check's p-values lie on the diagonal or above it.",
                  svg(fig))


KILL_CODES = {"FAIL": 4, "TIMEOUT": 4, "pass": 1, "n/a": 0, "skipped": 2, "ERROR": 3}
KILL_COLOURS = ["#ffffff", "#c8e6c9", "#e0e0e0", "#ffe082", "#c62828"]


def kill_matrix_plot(report):
    runs = {r["subject"]: r for r in report["runs"]}
    mutants = report["mutants"]
    columns = []
    for r in report["runs"]:
        for c in r["checks"]:
            if c["check"] not in columns:
                columns.append(c["check"])
    if not mutants or not columns:
        return ""
    grid = []
    for m in mutants:
        row = []
        for name in columns:
            codes = [KILL_CODES.get(c["verdict"], 0) for c in runs[m["subject"]]["checks"]
                     if c["check"] == name]
            row.append(max(codes) if codes else 0)
        grid.append(row)
    fig, ax = plt.subplots(figsize=(0.5 * len(columns) + 3.5, 0.28 * len(mutants) + 1.8))
    ax.imshow(grid, cmap=ListedColormap(KILL_COLOURS), vmin=0, vmax=4, aspect="auto")
    for y, m in enumerate(mutants):
        for x, name in enumerate(columns):
            mark = {4: "K", 1: ".", 2: "s", 3: "E"}.get(grid[y][x], "")
            ax.text(x, y, mark, ha="center", va="center", fontsize=7,
                    color="white" if grid[y][x] == 4 else "black")
            if name == m["named_check"]:
                ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False,
                                           edgecolor="black", linewidth=1.5))
    ax.set_xticks(range(len(columns)), columns, rotation=50, ha="right")
    ax.set_yticks(range(len(mutants)),
                  [f"{m['subject']} " + ("KILLED" if m["killed"] else "SURVIVED"
                                         if m.get("judged", True) else "not judged")
                   for m in mutants])
    ax.grid(False)
    return figure("kill matrix", "K killed (red), . passed, s skipped, E error; the box is the "
                  "check the catalog names.", svg(fig))


# ----------------------------------------------------------------------------- page


def table(run):
    head = ("<tr><th>check</th><th>verdict</th><th>p-value</th><th>alpha share</th>"
            "<th>power (0.99)</th><th>samples</th><th>time</th></tr>")
    rows = []
    for c in run["checks"]:
        na = c["verdict"] == "n/a"
        p = fmt_p(c.get("p_value")) or ("" if na else "exact")
        cls = "fail" if failed(c) or c["verdict"] == "ERROR" else ("muted" if na else "pass")
        rows.append(f'<tr class="{cls}"><td>{esc(check_name(c))}</td><td>{esc(c["verdict"])}</td>'
                    f'<td>{p}</td><td>{fmt_p(c.get("alpha_share"), 1)}</td>'
                    f'<td>{esc(c["power"])}</td><td>{"" if na else c["samples"]}</td>'
                    f'<td>{"" if na else format(c["seconds"], ".2f") + " s"}</td></tr>')
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
        repro = (f'<br><code>samplecheck replay {esc(c["repro_path"])}</code>'
                 if c.get("repro_path") else "")
        items.append(f"<li><b>{esc(check_name(c))} [{esc(c['verdict'])}]</b>: "
                     f"{esc(shown_detail(c['detail']))}{repro}</li>")
    return f"<ul class=\"details\">{''.join(items)}</ul>" if items else ""


def run_plots(run, failures_only=False):
    plots = []
    for c in run["checks"]:
        e = c.get("evidence") or {}
        if failures_only and not failed(c):
            continue
        if "fit" in e and e["fit"].get("tokens"):
            plots.append(fit_plot(c))
        if "tail_rows" in e and e["tail_rows"]:
            plots.append(tail_plot(c))
        if "divergence" in e and e["divergence"]:
            plots.append(divergence_plot(c))
    return "".join(plots)


def run_section(run, failures_only=False):
    plugin = f" (plugin {esc(run['plugin'])})" if run.get("plugin") else ""
    verdict = run["verdict"]
    return (f'<section><h2><span class="badge badge-{verdict.lower()}">{esc(verdict)}</span> '
            f'{esc(run["subject"])} <small>{esc(run["kind"])}{plugin}</small></h2>'
            f'<p class="muted">budget {esc(run["budget"])}, seed {run["seed"]}, alpha '
            f'{run["alpha"]:g} (Holm over the statistical checks), {run["samples"]} samples in '
            f'{run["seconds"]:.1f} s</p>{subject_facts(run)}{table(run)}{details(run)}'
            f'<div class="plots">{p_value_plot(run) if not failures_only else ""}'
            f'{run_plots(run, failures_only)}</div></section>')


def subject_facts(run):
    """The declared contracts, the subject process's own versions and the platform."""
    d = run.get("descriptor") or {}
    keys = ("rng_policy", "parameter_indexing", "degenerate_rows", "probs_normalisation",
            "uniform_rule", "inputs", "tie_policy", "filter_order")
    contracts = ", ".join(f"{k} {d[k]}" for k in keys if k in d)
    env = run.get("environment") or {}
    packages = (env.get("packages") or {}).items()
    # A shipped package's wheel and files that ran carry sha256s (samplecheck_subject.shipped):
    # a line of their own, so the versions stay readable.
    versions = ", ".join(([f"Python {env['python']}"] if "python" in env else [])
                         + [f"{n} {v}" for n, v in packages if "sha256:" not in v])
    shipped = ", ".join(f"{n} {v}" for n, v in packages if "sha256:" in v)
    platform = ", ".join(f"{k} {v}" for k, v in (run.get("platform") or {}).items())
    lines = [(label, text) for label, text in (("declares", contracts), ("runs on", versions),
                                               ("shipped code that ran", shipped), ("platform", platform)) if text]
    return "".join(f'<p class="muted">{label}: {esc(text)}</p>' for label, text in lines)


def mutants_page(report):
    survivors = [m for m in report["mutants"]
                 if not m["killed"] and not m["unavailable"] and m.get("judged", True)]
    parts = [kill_matrix_plot(report)]
    if survivors:
        names = ", ".join(esc(m["subject"]) for m in survivors)
        parts.append(f'<p class="fail">Survivors: {names}</p>')
    word = {m["subject"]: ("skipped (no device)" if m["unavailable"] else
                           f"not judged ({m['named_check']} did not run)"
                           if not m.get("judged", True) else
                           f"{'KILLED' if m['killed'] else 'SURVIVED'} by {m['named_check']}")
            for m in report["mutants"]}
    runs = "".join(f"<details><summary>{esc(r['subject'])}: {esc(word.get(r['subject'], ''))}"
                   f"</summary>{run_section(r, failures_only=True)}</details>"
                   for r in report["runs"])
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
            for c in s["checks"])
        parts.append(
            f"<section><h2>{esc(s['subject'])}</h2><p>{s['runs']} runs with fresh seeds, alpha "
            f"{s['alpha']:g}: {s['failed_runs']} failed (P(X &ge; {s['failed_runs']}) = "
            f"{s['failure_p_value']:.3g})</p><table><tr><th>check</th><th>n</th>"
            f"<th>false alarms (expected)</th><th>KS D</th><th>KS p</th><th>D-</th><th>D- p</th>"
            f"<th>Anderson-Darling p</th><th>median p</th></tr>{rows}</table>"
            f"<div class=\"plots\">{qq_plot(s)}</div></section>")
    return "".join(parts)


MAX_SERIES_PLOTTED = 48


def comparison_plot(cmp):
    """Which sizes (M or batch size, on a log axis) differ between A and B, one row per
    series (the entries that differ only in their size): the first divergence ringed."""
    series = [(i, s) for i, s in enumerate(cmp["series"]) if s["differing_sizes"]]
    if not series:
        return ""
    shown = series[:MAX_SERIES_PLOTTED]
    sizes = cmp["sizes"]
    first = cmp["first_divergence"]
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.28 * len(shown)))
    for row, (index, s) in enumerate(shown):
        ax.scatter(sizes, [row] * len(sizes), s=6, color=MUTED, lw=0,
                   label="equal" if row == 0 else None)
        ax.scatter(s["differing_sizes"], [row] * len(s["differing_sizes"]), s=14, color=FAIL,
                   marker="s", lw=0, label="differs" if row == 0 else None)
        if index == first["series"]:
            ax.scatter([first["size"]], [row], s=90, facecolors="none", edgecolors=ACCENT,
                       lw=1.2, label="first divergence")
    ax.set_xscale("log", base=2)
    ax.set_xlim(0.8, max(4096, max(sizes)) * 1.25)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([s["label"] for _, s in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("M" if cmp["kind"] == "matmul" else "batch size")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    more = len(series) - len(shown)
    note = f" ({more} more series with differences not drawn)" if more > 0 else ""
    return figure("Where A and B differ",
                  f"each row one series of the plan; red: the sizes whose output bits differ"
                  f"{note}", svg(fig), wide=True)


def comparison_page(report):
    cmp = report["comparison"]
    verdict = cmp["verdict"]
    sides = "".join(
        f"<tr><td>{label}</td><td><code>{esc(side['path'])}</code></td>"
        f"<td>{esc(side['subject'])}</td><td><code>{esc(side['hash'])}</code></td>"
        f"<td>{side['entries']}</td><td>{esc(json.dumps(side['platform']))}</td></tr>"
        for label, side in (("A", cmp["a"]), ("B", cmp["b"])))
    parts = [f"<table><tr><th></th><th>manifest</th><th>subject</th><th>hash</th>"
             f"<th>entries</th><th>platform</th></tr>{sides}</table>"]
    if verdict == "incomparable":
        parts.append(f'<p class="fail">Incomparable: {esc(cmp["why_not"])}</p>')
    elif verdict == "identical":
        parts.append(f"<p>Identical: all {cmp['entries']} entries have the same hash.</p>")
    else:
        first = cmp["first_divergence"]
        detail = (f"<br>first differing element: <code>{esc(first['detail'])}</code>"
                  if first.get("detail") else "")
        parts.append(f'<p class="fail">{cmp["differing_count"]} of {cmp["entries"]} entries '
                     f"differ; first divergence: {esc(first['name'])} "
                     f"(<code>{esc(first['hash_a'])}</code> vs "
                     f"<code>{esc(first['hash_b'])}</code>){detail}</p>")
        parts.append(f'<div class="plots">{comparison_plot(cmp)}</div>')
        rows = "".join(f"<tr><td>{d['index']}</td><td>{esc(d['name'])}</td>"
                       f"<td><code>{esc(d['hash_a'])}</code></td>"
                       f"<td><code>{esc(d['hash_b'])}</code></td></tr>" for d in cmp["differing"])
        listed = len(cmp["differing"])
        parts.append(f"<details><summary>the differing entries ({listed} listed of "
                     f"{cmp['differing_count']})</summary><table><tr><th>entry</th><th>what</th>"
                     f"<th>hash A</th><th>hash B</th></tr>{rows}</table></details>")
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
        raise SystemExit(f"render_report: report version {report.get('version')}; this "
                         f"renderer reads version {SUPPORTED_VERSION}")
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
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>samplecheck {esc(command)}: {word}</title><style>{STYLE}</style></head><body>"
            f"<h1>samplecheck {esc(command)}: <span class=\"{'fail' if status == 1 else ''}\">"
            f"{word}</span></h1><p class=\"muted\"><code>{esc(shlex.join(report['command_line']))}"
            f"</code> exited {status}{provenance(report)}</p>{body}</body></html>\n")


def provenance(report):
    """Which samplecheck wrote the report, where and when (absent from older reports)."""
    tool = report.get("samplecheck")
    words = [f"samplecheck {tool['version']} (revision {tool['revision']}, plugin ABI "
             f"{tool['plugin_abi']}, protocol {tool['protocol']})"] if tool else []
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
