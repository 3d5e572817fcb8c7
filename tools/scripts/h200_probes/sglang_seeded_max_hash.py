"""SGLang 0.5.10.post1's seeded sampler (`multinomial_with_seed`) where its hash is 2^32 - 1.

There x = hash / 0xFFFFFFFF is exactly 1.0, -log(-log x) is +inf, and the column wins
whatever its probability; a column that top-k / top-p zeroed has log-probability -inf, the
sum is NaN, and torch.argmax picks NaN too (catalog S05). This script finds such
(sampling_seed, position) keys with SGLang's own `murmur_hash32`, then calls SGLang's
`top_k_top_p_min_p_sampling_from_probs_torch` (top_k = 1) and `sampling_from_probs_torch`
(a row with a zero at the hit column) at them, and at as many keys without a hit as a
control. A measurement script for the H200 (docs/shipped/sglang.md), not a battery check: the
battery's support and ties checks judge the tokens.

    SAMPLECHECK_SGLANG_TREE=carry/sglang PYTHONPATH=python \\
        python3 tools/scripts/h200_probes/sglang_seeded_max_hash.py OUT_DIR [V] [POSITIONS]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

SEED = 20261204
CHUNK = 2048  # positions hashed at once: CHUNK x V uint32 on the device


def find_hits(hash_fn: Any, v: int, positions: int) -> list[tuple[int, int]]:
    """(position, column) of every hash equal to 2^32 - 1, positions 0 .. positions - 1."""
    import torch

    cols = torch.arange(v, device="cuda")
    hits: list[tuple[int, int]] = []
    for first in range(0, positions, CHUNK):
        pos = torch.arange(first, min(first + CHUNK, positions), device="cuda")
        seeds = torch.full_like(pos, SEED).to(torch.uint64)  # as multinomial_with_seed passes it
        hashed = hash_fn(seeds, pos, cols).view(torch.int32)  # 0xFFFFFFFF reads as -1
        for r, c in (hashed == -1).nonzero().tolist():
            hits.append((first + r, c))
    return hits


def peaked_row(v: int, zero_at: int | None = None) -> Any:
    """Token 0 holds 0.9, the rest share 0.1; optionally one token set to 0."""
    import torch

    p = torch.full((1, v), 0.1 / (v - 1), device="cuda")
    p[0, 0] = 0.9
    if zero_at is not None:
        p[0, zero_at] = 0.0
    return p


def draw_both(sampler: Any, v: int, position: int, column: int) -> dict[str, int]:
    import torch

    seed = torch.tensor([SEED], device="cuda")
    pos = torch.tensor([position], device="cuda")
    one = torch.ones(1, device="cuda")
    filtered = sampler.top_k_top_p_min_p_sampling_from_probs_torch(
        peaked_row(v), torch.tensor([1], device="cuda", dtype=torch.int32), one, one * 0, False, seed, pos
    )
    zero_col = column if column != 0 else 1
    unfiltered = sampler.sampling_from_probs_torch(peaked_row(v, zero_col), seed, pos)
    return {"top_k_1_token": int(filtered[0]), "zero_token": zero_col, "unfiltered_token": int(unfiltered[0])}


def main(out_dir: str, v: int = 151936, positions: int = 1 << 20) -> None:
    import torch

    from samplecheck_subject.adapters import sglang_shipped as adapter

    mods = adapter._modules()
    sampler, hash_fn = mods[adapter.SAMPLER], mods[adapter.HASH].murmur_hash32
    hits = find_hits(hash_fn, v, positions)
    hit_positions = {p for p, _ in hits}
    draws = [{"position": p, "column": c, **draw_both(sampler, v, p, c)} for p, c in hits[:24]]
    controls = [p for p in range(positions) if p not in hit_positions][:24]
    control_draws = [{"position": p, **draw_both(sampler, v, p, 0)} for p in controls]
    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "v": v,
        "seed": SEED,
        "positions": positions,
        "hits": len(hits),
        "expected_hits": positions * v / 2**32,
        "hit_draws": draws,
        "filtered_out_drawn": sum(d["top_k_1_token"] != 0 for d in draws),
        "zero_probability_drawn": sum(d["unfiltered_token"] == d["zero_token"] for d in draws),
        "control_draws_not_top": sum(d["top_k_1_token"] != 0 for d in control_draws),
        "controls": len(control_draws),
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "sglang_seeded_max_hash.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: v for k, v in result.items() if k != "hit_draws"}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
