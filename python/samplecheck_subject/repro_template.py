"""The fixed parts of a standalone reproduction script (samplecheck_subject.repro_script
fills in the header, the subject's call and the row). Kept as text: the script must run
without samplecheck, so nothing here is imported by it."""

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


def pearson(counts, status, q):
    """Pearson's X2 over the check's merged cells of the IN draws; (p-value, method)."""
    in_counts = np.where(status == ord("I"), counts, 0)
    n = int(in_counts.sum())
    boundary = int(counts[status == ord("B")].sum())
    cells = merged_cells(q, n)
    rows = []
    for members, expected in cells:
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
        print(f"one cell over {n} IN draws: nothing for Pearson to judge")
        return 1.0, "none"
    p, method = chi_square_upper_tail(x2, df)
    print(f"Pearson X2 {x2:.2f}, df {df}, over {len(rows)} merged cells of {n} IN draws "
          f"({boundary} on BOUNDARY tokens, left out): p = {p:.3e} ({method})")
    return p, method


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
        return 1
    if not FIT:
        print(f"NOT REPRODUCED: no OUT token in {DRAWS} draws")
        return 0
    p, _ = pearson(counts, status, q)
    if p < LEVEL:
        print(f"REPRODUCED: p {p:.3e} < {LEVEL:.3e}, the level the check's p-value was compared with")
        return 1
    print(f"NOT REPRODUCED: p {p:.3e} >= {LEVEL:.3e}, the level the check's p-value was compared with")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''
