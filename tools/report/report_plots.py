"""The plots of report.html: matplotlib figures as inline SVG (render_report.py's pages
draw them; each takes the part of report.json it shows, docs/reports.md names the keys)."""

import html
import io
import math
import re
import textwrap

import matplotlib

matplotlib.use("svg")
# pyplot after the backend is chosen.
import matplotlib.pyplot as plt
from matplotlib.colors import ListedColormap

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: small files, selectable labels
        "svg.hashsalt": "samplecheck",  # the same report renders to the same bytes
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
    }
)

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
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg") :], flags=re.S)
    return '<div class="plot">' + text + "</div>"


def figure(title, description, body, wide=False):
    return (
        f'<figure class="{"wide" if wide else ""}"><figcaption><b>{esc(title)}</b> '
        f"{esc(description)}</figcaption>{body}</figure>"
    )


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
        ax.annotate(
            f"p {c['p_value']:.1e}", (p, y), xytext=(6, 3), textcoords="offset points", fontsize=7, color=colour
        )
    ax.set_yticks(range(len(rows)), [check_name(c) for c in rows])
    ax.set_xscale("log")
    lo = min(min(max(c["p_value"], floor) for c in rows), min(c["alpha_share"] for c in rows))
    ax.set_xlim(max(lo / 10, floor), 2)
    ax.invert_yaxis()
    ax.set_xlabel("p-value (dot) and the alpha share it was compared with (bar); a dot left of its bar fails")
    return figure(
        "p-values against their alpha shares", f"(Holm over the run's alpha {run['alpha']:g}).", svg(fig), wide=True
    )


def fit_plot(c):
    """Observed against expected IN-conditional counts of the worst row."""
    fit = c["evidence"]["fit"]
    tokens = fit["tokens"]
    if not tokens:
        return ""
    fig, ax = plt.subplots(figsize=(max(5.0, 0.28 * len(tokens) + 2), 3.4))
    xs = range(len(tokens))
    expected = [t["expected"] for t in tokens]
    ax.bar(xs, expected, color="#cfd8dc", label="expected count (n q)", width=0.8)
    for x, t in zip(xs, tokens):
        colour = FAIL if t["deviating"] else ACCENT
        ax.errorbar(
            [x],
            [t["observed"]],
            yerr=[[t["observed"] - t["lower"]], [t["upper"] - t["observed"]]],
            fmt="o",
            color=colour,
            capsize=3,
            markersize=5,
        )
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
        f"Tokens not shown: {rest['observed']} draws, {rest['expected']:.1f} expected.",
        svg(fig),
    )


def short_label(text: str, width: int = 44) -> str:
    """A row label wrapped to lines of `width` characters (the full one is in the detail)."""
    return "\n".join(textwrap.wrap(text, width)) or text


def tail_plot(c):
    """Each tail row's expected and seen mass below the threshold, at the page's width."""
    rows = c["evidence"]["tail_rows"]
    fig, ax = plt.subplots(figsize=(10, 0.55 * len(rows) + 1.4))
    level = (c.get("alpha_share") or 0) / max(len(rows), 1)
    for y, r in enumerate(rows):
        seen = max(r["seen_mass"], 1e-12)
        colour = FAIL if failed(c) and r["p_value"] <= level else ACCENT
        ax.plot([r["expected_mass"]], [y], marker="D", color="black", markersize=6)
        ax.errorbar(
            [seen],
            [y],
            xerr=[[seen - max(r["seen_lower"], 1e-12)], [r["seen_upper"] - seen]],
            fmt="o",
            color=colour,
            capsize=3,
        )
        ax.annotate(
            f"{r['count']:,} of {r['draws']:,} draws, p {r['p_value']:.1e}",
            (max(r["seen_upper"], r["expected_mass"]), y),
            xytext=(8, 0),
            textcoords="offset points",
            fontsize=8,
            va="center",
        )
    ax.plot([], [], "D", color="black", label="expected mass")
    ax.plot([], [], "o", color=ACCENT, label="seen fraction, Clopper-Pearson interval")
    ax.set_xscale("log")
    left, right = ax.get_xlim()
    ax.set_xlim(left, right * 30)  # room for the annotations on the right
    ax.set_yticks(range(len(rows)), [short_label(r["row"]) for r in rows], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel(f"mass on the tokens below {rows[0]['threshold']:g}")
    ax.legend(
        fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.55 / (0.55 * len(rows) + 1)), ncol=2, frameon=False
    )
    return figure(f"{check_name(c)}: tail mass", "expected against seen, per row.", svg(fig), wide=True)


def ties_plot(c):
    """Each plotted tie group's cells against the even split, as observed / expected."""
    groups = c["evidence"]["tie_groups"]
    lines, labels, starts = [], [], []
    for g in groups:
        starts.append(len(lines))
        for cell in g["cells"]:
            lines.append((g, cell))
            labels.append(cell["label"])
    fig, ax = plt.subplots(figsize=(10, 0.24 * len(lines) + 0.45 * len(groups) + 1.0))
    level = c["evidence"].get("tie_level", 0.0)
    y = 0.0
    ys = []
    for i, (g, cell) in enumerate(lines):
        if i in starts:
            y += 0.9  # the group's header line
            ax.annotate(
                f"{short_label(g['row'], 90)}: {g['group_size']} tied tokens, p {g['p_value']:.1e}",
                (0, y - 0.75),
                xycoords=("axes fraction", "data"),
                fontsize=8,
                fontweight="bold" if g["p_value"] <= level else "normal",
            )
        e = cell["expected"]
        colour = FAIL if g["p_value"] <= level else ACCENT
        if e > 0:  # a split of a group that got no draws has nothing to show
            ratio = cell["observed"] / e
            spread = [[ratio - cell["lower"] / e], [cell["upper"] / e - ratio]]
            ax.errorbar([ratio], [y], xerr=spread, fmt="o", color=colour, capsize=3, markersize=4)
        ys.append(y)
        y += 1.0
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(ys, labels, fontsize=7)
    ax.set_ylim(-0.2, y)
    ax.invert_yaxis()
    ax.set_xlabel("observed / even split (1: the group's draws split evenly), Clopper-Pearson interval")
    judged = c["evidence"].get("tie_groups_judged", len(groups))
    return figure(
        f"{check_name(c)}: tie groups",
        f"the {len(groups)} groups with the smallest p-values of {judged} judged; a "
        "large group shows the two sides of its worst split; red: a group whose p-value "
        f"is at most the check's level {level:.1e}.",
        svg(fig),
        wide=True,
    )


def divergence_plot(c):
    """The batch sizes that differ from M = 1 and where in the output they differ."""
    e = c["evidence"]
    entries = e["divergence"]
    tested = e.get("batch_sizes") or [d["m"] for d in entries]
    differing = {d["m"] for d in entries}
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 4.8), sharex=True, gridspec_kw={"height_ratios": [1, 2]})
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
    points = bottom.scatter(ms, columns, c=counts, cmap="Reds", s=18, marker="s", vmin=0, edgecolors="none")
    fig.colorbar(points, ax=[top, bottom], label="differing outputs in the column band", pad=0.01)
    bottom.set_ylim(0, e.get("columns") or max(columns) + 1)
    bottom.set_ylabel("output column")
    bottom.set_xscale("log", base=2)
    bottom.set_xlim(0.8, 4096 * 1.25)
    bottom.set_xticks([1, 4, 16, 64, 256, 1024, 4096], ["1", "4", "16", "64", "256", "1024", "4096"])
    bottom.set_xlabel("batch size M")
    rows = "; ".join(
        f"M = {d['m']}: {d['outputs']} output(s) in {d['rows']} row(s) "
        f"(batch rows {', '.join(map(str, d['batch_rows']))})"
        for d in entries[:6]
    )
    more = f"; and {len(entries) - 6} more" if len(entries) > 6 else ""
    return figure(
        f"{check_name(c)}: {e.get('shape', '')} (k {e.get('k', '?')}, {'bias' if e.get('bias') else 'no bias'})",
        f"where batch sizes differ from M = 1. {rows}{more}.",
        svg(fig),
        wide=True,
    )


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
        ax.fill_between([0, 1], [-eps, 1 - eps], [eps, 1 + eps], color=MUTED, alpha=0.25, label="99% DKW band")
    ax.plot([0, 1], [0, 1], color="black", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("uniform quantile")
    ax.set_ylabel("p-value")
    ax.legend(fontsize=7, loc="upper left")
    return figure(
        f"calibration of {summary['subject']}: p-values' QQ plot",
        "under the null every check's p-values lie on the diagonal or above it.",
        svg(fig),
    )


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
            codes = [KILL_CODES.get(c["verdict"], 0) for c in runs[m["subject"]]["checks"] if c["check"] == name]
            row.append(max(codes) if codes else 0)
        grid.append(row)
    fig, ax = plt.subplots(figsize=(0.5 * len(columns) + 3.5, 0.28 * len(mutants) + 1.8))
    ax.imshow(grid, cmap=ListedColormap(KILL_COLOURS), vmin=0, vmax=4, aspect="auto")
    for y, m in enumerate(mutants):
        for x, name in enumerate(columns):
            mark = {4: "K", 1: ".", 2: "s", 3: "E"}.get(grid[y][x], "")
            ax.text(x, y, mark, ha="center", va="center", fontsize=7, color="white" if grid[y][x] == 4 else "black")
            if name == m["named_check"]:
                ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=1.5))
    ax.set_xticks(range(len(columns)), columns, rotation=50, ha="right")
    ax.set_yticks(
        range(len(mutants)),
        [
            f"{m['subject']} " + ("KILLED" if m["killed"] else "SURVIVED" if m.get("judged", True) else "not judged")
            for m in mutants
        ],
    )
    ax.grid(False)
    return figure(
        "kill matrix", "K killed (red), . passed, s skipped, E error; the box is the check the catalog names.", svg(fig)
    )


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
        ax.scatter(sizes, [row] * len(sizes), s=6, color=MUTED, lw=0, label="equal" if row == 0 else None)
        ax.scatter(
            s["differing_sizes"],
            [row] * len(s["differing_sizes"]),
            s=14,
            color=FAIL,
            marker="s",
            lw=0,
            label="differs" if row == 0 else None,
        )
        if index == first["series"]:
            ax.scatter(
                [first["size"]], [row], s=90, facecolors="none", edgecolors=ACCENT, lw=1.2, label="first divergence"
            )
    ax.set_xscale("log", base=2)
    ax.set_xlim(0.8, max(4096, max(sizes)) * 1.25)
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([s["label"] for _, s in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("M" if cmp["kind"] == "matmul" else "batch size")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    more = len(series) - len(shown)
    note = f" ({more} more series with differences not drawn)" if more > 0 else ""
    return figure(
        "Where A and B differ",
        f"each row one series of the plan; red: the sizes whose output bits differ{note}",
        svg(fig),
        wide=True,
    )
