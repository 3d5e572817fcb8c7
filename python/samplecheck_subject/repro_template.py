"""The fixed parts of a standalone reproduction script (samplecheck_subject.repro_script
fills in the header, the subject's call and the row). Kept as text: the script must run
without samplecheck, so nothing here is imported by it; the functions before the texts
build the script's import lines."""

from __future__ import annotations

from .script_call import ScriptCall


def sorted_imports(lines: list[str]) -> list[str]:
    """Each run of import lines sorted as isort sorts one section (`import` before `from`, by
    module), other lines (one that puts a tree on sys.path) kept where they are."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if line.startswith(("import ", "from ")):
            run.append(line)
            continue
        out += sorted(run, key=lambda x: (x.startswith("from "), x.split()[1].lower()))
        run = []
        if line:
            out.append(line)
    return out


def import_lines(call: ScriptCall, run: str, stdlib: tuple[str, ...]) -> tuple[str, str]:
    """The script's standard-library imports, then its upstream ones, whose failure is exit 2,
    never read as a verdict (Python's own exit is 1)."""
    names = sorted({"argparse", "base64", "sys", "traceback", "zlib", *stdlib, *call.stdlib})
    upstream = sorted_imports(
        ["import numpy as np", *(x for x in call.imports.splitlines() if x != "import numpy as np")]
    )
    guarded = (
        "try:\n" + "\n".join("    " + line for line in upstream) + "\nexcept ImportError as e:\n"
        f'    print(f"cannot import the subject\'s package ({{e}}); run: {run}", file=sys.stderr)\n'
        "    sys.exit(2)"
    )
    return "".join(f"import {name}\n" for name in names), guarded


def assemble(header: str, call: ScriptCall, run: str, stdlib: tuple[str, ...], constants: str, tail: list[str]) -> str:
    """A script: its header, its imports, its constants, the subject's call, then `tail`."""
    imports, guarded = import_lines(call, run, stdlib)
    return "\n".join([header, imports, guarded, "", constants, "", "", call.code.strip() + "\n", *tail])


# The chi-square upper tail: torch's regularized gamma where torch is there, else the
# series / continued fraction (Numerical Recipes' gser and gcf), a few lines with no scipy.
MATH = '''
def gammaincc(a, x):
    """Q(a, x), the regularized upper incomplete gamma function."""
    if x <= 0:
        return 1.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:  # the series for P(a, x) converges here
        term = total = 1.0 / a
        ap = a
        for _ in range(10000):
            ap += 1
            term *= x / ap
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300  # Lentz's continued fraction for Q(a, x)
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return math.exp(log_front) * h


def chi_square_upper_tail(x, df):
    """P(X2 >= x) for df degrees of freedom, and the method that computed it."""
    try:
        import torch
    except ImportError:
        return gammaincc(df / 2, x / 2), "regularized upper incomplete gamma Q(df/2, x/2), series / continued fraction"
    q = torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64), torch.tensor(x / 2, dtype=torch.float64))
    return float(q), "torch.special.gammaincc(df/2, x/2) in float64"


def betainc(a, b, x):
    """I_x(a, b), the regularized incomplete beta function (Numerical Recipes' betai: the
    continued fraction by Lentz's method, on the side of x where it converges fast)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * beta_fraction(a, b, x) / a
    return 1.0 - front * beta_fraction(b, a, 1 - x) / b


def beta_fraction(a, b, x):
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (tiny if abs(d) < tiny else d)
    h = d
    for m in range(1, 1000000):
        for an in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + an * d
            d = 1 / (tiny if abs(d) < tiny else d)
            c = 1 + an / c
            c = tiny if abs(c) < tiny else c
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def binomial_two_sided(k, n, p):
    """2 min(P(X <= k), P(X >= k)), X ~ Binomial(n, p), capped at 1: the exact doubled tail
    (at least the check's randomised two-sided p-value, which splits the atom P(X = k))."""
    if p <= 0:
        return 1.0 if k == 0 else 0.0
    if p >= 1:
        return 1.0 if k == n else 0.0
    lower = 1.0 if k >= n else betainc(n - k, k + 1, 1 - p)
    upper = 1.0 if k <= 0 else betainc(k, n - k + 1, p)
    return min(1.0, 2 * min(lower, upper))


def sidak(p, k):
    """The smallest of k p-values as one p-value (Sidak): 1 - (1 - p)^k."""
    return 1.0 if p >= 1 else min(1.0, -math.expm1(k * math.log1p(-p)))


def verdict(p, statistic="p"):
    """The exit status: 1 (reproduced) where p is below the record's LEVEL, else 0, and the line
    that says so."""
    if p < LEVEL:
        print(f"REPRODUCED: {statistic} {p:.3e} < {LEVEL:.3e}, the level the check's p-value was compared with")
        return 1
    print(f"NOT REPRODUCED: {statistic} {p:.3e} >= {LEVEL:.3e}, the level the check's p-value was compared with")
    return 0


def merged_cells(q, n):
    """The check's cells: IN tokens by q descending (stable), each pool closed once its
    expected count n q reaches 5, a last short pool joined to the cell before it."""
    q = q / q[q > 0].sum()  # as the check normalises them before its cells
    order = np.flatnonzero(q > 0)
    order = order[np.argsort(-q[order], kind="stable")]
    cells, start, pool = [], 0, 0.0
    for k, token in enumerate(order):
        pool += n * q[token]
        if pool >= 5.0:
            cells.append([order[start:k + 1], pool])
            start, pool = k + 1, 0.0
    if start < order.size:
        if cells:
            cells[-1][0] = np.concatenate([cells[-1][0], order[start:]])
            cells[-1][1] += pool
        else:
            cells.append([order[start:], pool])
    return cells
'''

MAIN = '''

def unpack(text, dtype):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


def out_tokens(counts, status):
    """Draws on tokens the reference gives probability 0 (OUT): each one is impossible."""
    drawn = np.flatnonzero((counts > 0) & (status == ord("O")))
    if drawn.size == 0:
        return False
    print(f"{'cell':<28}{'observed':>10}{'expected':>12}")
    for token in drawn[np.argsort(-counts[drawn], kind="stable")][:20]:
        print(f"{'token ' + str(token) + ' (OUT)':<28}{counts[token]:>10}{0:>12}")
    if drawn.size > 20:
        print(f"... and {drawn.size - 20} more OUT tokens drawn")
    total = int(counts[drawn].sum())
    print(f"{total} of {int(counts.sum())} draws on OUT tokens: the reference gives them probability 0, "
          "so the exact p-value of any such draw is 0")
    return True


def pearson(in_counts, q, n):
    """Pearson's X2 over the check's merged cells of the IN draws; the plain chi-square's p."""
    rows = []
    for members, expected in merged_cells(q, n):
        observed = int(in_counts[members].sum())
        name = f"token {members[0]}" if members.size == 1 else f"{members.size} tokens from {members[0]}"
        rows.append((name, observed, expected, (observed - expected) ** 2 / expected))
    x2 = sum(r[3] for r in rows)
    df = len(rows) - 1
    print(f"{'cell':<28}{'observed':>10}{'expected':>12}{'(o-e)^2/e':>12}")
    shown = sorted(range(len(rows)), key=lambda i: -rows[i][3])[:20] if len(rows) > 20 else range(len(rows))
    for i in sorted(shown):
        name, observed, expected, term = rows[i]
        print(f"{name:<28}{observed:>10}{expected:>12.2f}{term:>12.2f}")
    if len(rows) > 20:
        print(f"... {len(rows) - 20} more cells (the 20 largest terms shown)")
    if df <= 0:
        print(f"Pearson: one cell over {n} IN draws, nothing to judge: p = 1")
        return 1.0
    p, method = chi_square_upper_tail(x2, df)
    print(f"Pearson X2 {x2:.2f}, df {df}, over {len(rows)} merged cells of {n} IN draws: p = {p:.3e} ({method})")
    return p


def cut_points(prefix, n):
    """The check's cuts (row_tests.h): the first r tokens in q order whose mass reaches
    2^-j, and the first whose rest falls to 2^-j or below, j = 1, 3, 5, ..., while n 2^-j >= 5."""
    cuts, last = set(), prefix.size - 1
    for j in range(1, 64, 2):
        t = math.ldexp(1.0, -j)
        if n * t < 5.0:
            break
        for r in np.searchsorted(prefix[1:], [t, 1.0 - t], side="left") + 1:
            if 1 <= r < last and prefix[r] < 1.0:
                cuts.add(int(r))
    return sorted(cuts)


def directed(in_counts, q, n):
    """The check's directed family (row_tests.h): the count on the first r tokens in q order
    at each cut, Binomial(n, Q_r), and each token with n q >= 20 (the 64 of largest Poisson
    deviance tested), every one by the exact doubled tail; Sidak over the family's size.
    (p, the family's size), or (1, 0) where the check has no family."""
    order = np.flatnonzero(q > 0)
    order = order[np.argsort(-q[order], kind="stable")]
    qs = q[order] / np.cumsum(q)[-1]  # as the check renormalises: a sum in token order
    prefix = np.concatenate([[0.0], np.cumsum(qs)])
    prefix = np.minimum(prefix / prefix[-1], 1.0)
    seen = np.concatenate([[0], np.cumsum(in_counts[order])])
    cuts = cut_points(prefix, n)
    p_cut, worst = 1.0, None
    for r in cuts:
        p = binomial_two_sided(int(seen[r]), n, float(prefix[r]))
        if p < p_cut:
            p_cut, worst = p, r
    if worst is not None:
        print(f"cuts: the first {worst} tokens in q order (mass {prefix[worst]:.6g}, expected "
              f"{n * prefix[worst]:.1f}) drew {seen[worst]} of {n}: p = {p_cut:.3e} (exact binomial, "
              f"doubled tail), the smallest of {len(cuts)} cuts")
    heavy = np.flatnonzero(n * qs >= 20.0)
    observed, expected = in_counts[order[heavy]].astype(np.float64), n * qs[heavy]
    with np.errstate(divide="ignore", invalid="ignore"):
        deviance = 2 * (np.where(observed > 0, observed * np.log(observed / expected), 0.0) - observed + expected)
    top = heavy[np.lexsort((order[heavy], -deviance))[:64]]
    p_tok, token = 1.0, None
    for k in top if heavy.size >= 2 else []:
        p = binomial_two_sided(int(in_counts[order[k]]), n, min(float(qs[k]), 1.0))
        if p < p_tok:
            p_tok, token = p, k
    if token is not None:
        print(f"tokens: token {order[token]} (q {qs[token]:.4g}, expected {n * qs[token]:.1f}) drew "
              f"{in_counts[order[token]]}: p = {p_tok:.3e} (exact binomial), the smallest of {heavy.size} tokens")
    family = len(cuts) + (heavy.size if heavy.size >= 2 else 0)
    if order.size <= 2 or family == 0:
        return 1.0, 0
    return sidak(min(p_cut, p_tok if heavy.size >= 2 else 1.0), family), family


def weighted_share(p, w):
    """The check's p-value of a part given the share w of the level (stats::weighted_share_p)."""
    return p / w if p <= w / 2 else 0.5 + 0.5 * (p - w / 2) / (1 - w / 2)


def fit_row(counts, status, q):
    """The row's p-value as the check forms it (distribution_tests.cpp's fit_row without its
    Monte Carlo, which changes p-values above 1/20 only): the IN draws' Pearson and directed
    family, Sidak over the two; the BOUNDARY count against the mass in BOUNDARY_MASS that
    fits it best at 1/20 of the level (weighted Bonferroni)."""
    in_counts = np.where(status == ord("I"), counts, 0)
    n, n_all = int(in_counts.sum()), int(counts.sum())
    p_in = -1.0
    if np.count_nonzero(status == ord("I")) >= 2 and n > 0:
        p_pearson = pearson(in_counts, q, n)
        p_directed, family = directed(in_counts, q, n)
        p_in = sidak(min(p_pearson, p_directed), 2) if family else p_pearson
        alone = "Pearson alone (the check has no directed family where the row has <= 2 tokens)"
        over = f"Pearson and the directed family of {family}" if family else alone
        print(f"IN part: Sidak over {over}: p = {p_in:.3e}")
    p_b = -1.0
    if BOUNDARY_MASS is not None and (status == ord("B")).any() and n_all > 0:
        k = int(counts[status == ord("B")].sum())
        m = min(max(k / n_all, BOUNDARY_MASS[0]), BOUNDARY_MASS[1])
        p_b = binomial_two_sided(k, n_all, m)
        print(f"BOUNDARY: {k} of {n_all} draws vs mass [{BOUNDARY_MASS[0]:.4g}, {BOUNDARY_MASS[1]:.4g}]: "
              f"p = {p_b:.3e} (exact binomial at {m:.4g})")
    if p_in >= 0 and p_b >= 0:
        return min(weighted_share(p_in, 0.95), min(1.0, p_b / 0.05))
    return p_in if p_in >= 0 else p_b if p_b >= 0 else 1.0


def tail_row(counts):
    """The tail check's test: the draws on the tail set against its mass, exact two-sided."""
    tail = unpack(TAIL_SET, np.uint8) == ord("T")
    k, n = int(counts[tail].sum()), int(counts.sum())
    p = binomial_two_sided(k, n, TAIL_MASS)
    print(f"{k} of {n} draws on the {int(tail.sum())} tokens below {TAIL_THRESHOLD:g} (expected mass "
          f"{TAIL_MASS:.6g}, {n * TAIL_MASS:.1f} draws; seen {k / n:.6g}): p = {p:.3e} (exact binomial, doubled tail)")
    return p


def tie_group(counts, row, status):
    """The ties check's test of one group of IN tokens holding one value: Pearson against equal
    shares (chi-square, m - 1 df) up to 16 tokens, else its 7 dyadic splits of the ids, each
    an exact binomial (doubled tail; the check's are randomised), Sidak over the 7."""
    group = np.flatnonzero((status == ord("I")) & (row == row[GROUP_FIRST]))
    observed = counts[group]
    n_g, m = int(observed.sum()), group.size
    print(f"group: {m} IN tokens of value {row[GROUP_FIRST]!r} from token {GROUP_FIRST}, {n_g} draws in it")
    if n_g == 0:
        return 1.0
    if m <= 16:
        e = n_g / m
        for token, o in zip(group, observed):
            print(f"{'token ' + str(token):<28}{o:>10}{e:>12.2f}")
        x2 = float(((observed - e) ** 2).sum() / e)
        p, method = chi_square_upper_tail(x2, m - 1)
        print(f"Pearson X2 {x2:.2f} on {m - 1} df against equal shares: p = {p:.3e} ({method})")
        return p
    prefix, nodes, ps = np.concatenate([[0], np.cumsum(observed)]), [(0, m)], []
    for _ in range(3):
        deeper = []
        for a, e in nodes:
            h = a + (e - a) // 2
            lower, total = int(prefix[h] - prefix[a]), int(prefix[e] - prefix[a])
            p = binomial_two_sided(lower, total, (h - a) / (e - a)) if total else 1.0
            print(f"ids {group[a]}..{group[h - 1]} hold {lower} of the {total} draws of ids {group[a]}..{group[e - 1]} "
                  f"(expected {total * (h - a) / (e - a):.1f}): p = {p:.3e}")
            ps.append(p)
            deeper += [(a, h), (h, e)]
        nodes = deeper
    return sidak(min(ps), len(ps))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED, help=f"the draws' seed (default {SEED})")
    parser.add_argument("--device", default=None, help="where the subject runs (default: its own choice)")
    args = parser.parse_args()
    row, status, q = unpack(ROW, "<f4").copy(), unpack(STATUS, np.uint8), unpack(Q, "<f8")
    print(f"{SUBJECT}, check {CHECK}, row {LABEL!r} (V = {row.size}, {PARAMS}): {DRAWS} draws, seed {args.seed}")
    try:
        tokens = np.asarray(draw(row, PARAMS, DRAWS, args.seed, args.device)).astype(np.int64)
    except Exception:  # noqa: BLE001 - the call could not run here: no verdict either way (Python's own exit is 1)
        traceback.print_exc()
        print("the call failed: exit 2, neither reproduced nor not", file=sys.stderr)
        return 2
    if tokens.size != DRAWS or (tokens < 0).any() or (tokens >= row.size).any():
        print(f"the call returned {tokens.size} tokens, some outside [0, {row.size}): reproduced")
        return 1
    counts = np.bincount(tokens, minlength=row.size)
    if out_tokens(counts, status):
        print("REPRODUCED: a token outside the reference's support was drawn")
        if CHECK == "parameter_routing":
            print("(from the row alone under its own parameters: not a routing fault)")
        return 1
    if VERDICT == "out":
        print(f"NOT REPRODUCED: no OUT token in {DRAWS} draws")
        if CHECK == "parameter_routing":
            print("(the row alone under its own parameters: the batch's routing is at fault;"
                  " samplecheck replay runs it)")
        return 0
    if VERDICT == "fit":
        p = fit_row(counts, status, q)
    elif VERDICT == "tail":
        p = tail_row(counts)
    else:
        p = tie_group(counts, row, status)
    return verdict(p)


if __name__ == "__main__":
    sys.exit(main())
'''

# The main of a request script (samplecheck_subject.repro_batch): one request in the batches its
# check compared.
BATCH_MAIN = '''

def unpack(text, dtype):
    return np.frombuffer(zlib.decompress(base64.b64decode(text)), dtype=dtype)


def batch_of(size, slot, kind):
    """`size` requests: the recorded one at `slot` and, kind "own", each other slot one of its
    own (the recorded subsequence and offset, the seed + 1 + slot); kind "same": every slot it;
    kind "recorded": the check's batch, each slot keyed as the check keyed it."""
    seed, subsequence, offset = REQUEST
    if kind == "same":
        return [REQUEST] * size
    if kind == "recorded":
        return [tuple(int(w) for w in words) for words in unpack(BATCH, "<u8").reshape(-1, 3)]
    return [REQUEST if j == slot else ((seed + 1 + j) % (1 << 64), subsequence, offset) for j in range(size)]


def placed(size, slot, kind):
    if size == 1:
        return "alone (B = 1)"
    if kind == "recorded":
        return f"in the check's batch of {size} (its requests, each on a copy of the row) at slot {slot}"
    return f"in a batch of {size}{' copies of it' if kind == 'same' else ''} at slot {slot}"


def token_in(row, size, slot, kind, device):
    """The token of slot `slot` of one batch (the call may write its logits: a copy each)."""
    return int(np.asarray(draw_requests(row.copy(), PARAMS, batch_of(size, slot, kind), device))[slot])


def calls_of_one_batch(row, device, calls):
    """run_to_run: one batch (PLACEMENTS[0]) called `calls` times; every slot of each call
    compared with call 1's (the batch is copies of the row: any slot that moves is the defect)."""
    size, slot, kind = PLACEMENTS[0]
    requests = batch_of(size, slot, kind)
    first = np.asarray(draw_requests(row.copy(), PARAMS, requests, device))
    print(f"call 1, {placed(size, slot, kind)}: token {first[slot]}; the check's call 1: {RECORDED[0]}")
    moved = []
    for call in range(2, calls + 1):
        again = np.asarray(draw_requests(row.copy(), PARAMS, requests, device))
        diff = np.flatnonzero(again != first)
        check = f"; the check's call {call}: {RECORDED[-1]}" if call == len(PLACEMENTS) else ""
        where = f" (first at slot {diff[0]}: token {first[diff[0]]}, then {again[diff[0]]})" if diff.size else ""
        print(f"call {call}: token {again[slot]}{check}; {diff.size} of {size} slots differ from call 1{where}")
        moved += [call] if diff.size else []
    if moved:
        print(f"REPRODUCED: calls {moved} of one batch differ from call 1 ({len(moved)} of {calls - 1} calls)")
        return 1
    print(f"NOT REPRODUCED: {calls} calls of one batch of {size} gave the same tokens in every slot (the check's "
          "batch held other rows: samplecheck replay runs it)")
    return 0


def placements_compared(row, device, sizes):
    """batch_invariance, batch_reorder, per_request_seeds: the request's token in each placement."""
    more = [b for b in BATCH_SIZES or [] if b not in [p[0] for p in PLACEMENTS]] if sizes == "all" else []
    tried = [(p, recorded) for p, recorded in zip(PLACEMENTS, RECORDED)]
    tried += [((b, min(PLACEMENTS[-1][1], b - 1), "own"), None) for b in more]
    tokens = []
    for (size, slot, kind), recorded in tried:
        token = token_in(row, size, slot, kind, device)
        differs = "  DIFFERS" if tokens and token != tokens[0] else ""
        print(f"{placed(size, slot, kind)}: token {token}" + (f"; the check's: {recorded}" if recorded else "")
              + differs)
        tokens.append(token)
    differ = [p for (p, _), t in zip(tried, tokens) if t != tokens[0]]
    if differ:
        print(f"REPRODUCED: the request drew token {tokens[0]} {placed(*tried[0][0])}, another "
              f"{placed(*differ[0])} ({len(differ)} of {len(tried) - 1} other placements differ)")
        return 1
    more = "; --sizes all tries every batch size it ran" if sizes == "recorded" and BATCH_SIZES else ""
    print(f"NOT REPRODUCED: the request drew token {tokens[0]} in all {len(tried)} placements tried (the check's "
          f"batches held other rows beside it: samplecheck replay runs them{more})")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="where the subject runs (default: its own choice)")
    parser.add_argument("--sizes", choices=("recorded", "all"), default="recorded",
                        help="the recorded batches only, or also every batch size the check ran (batch_invariance)")
    parser.add_argument("--calls", type=int, default=max(3, len(PLACEMENTS)),
                        help="run_to_run: how many calls of the batch (default: the check's 3)")
    args = parser.parse_args()
    row = unpack(ROW, "<f4").copy()
    print(f"{SUBJECT}, check {CHECK}, row {LABEL!r} (V = {row.size}, {PARAMS}): request {REQUEST}")
    try:
        if CHECK == "run_to_run":
            return calls_of_one_batch(row, args.device, max(2, args.calls))
        return placements_compared(row, args.device, args.sizes)
    except Exception:  # noqa: BLE001 - the call could not run here: no verdict either way (Python's own exit is 1)
        traceback.print_exc()
        print("the call failed: exit 2, neither reproduced nor not", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
'''
