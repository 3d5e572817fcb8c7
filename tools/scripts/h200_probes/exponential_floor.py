"""The float32 Exp(1) draws of torch's CUDA `exponential_` near 0, where a Gumbel-max or
exponential-race sampler (`argmax(probs / q)`: torch.multinomial(n=1), SGLang v0.5.20,
vLLM) decides whether a token far below the leader can win: q's smallest values, and
P(q <= x) seen against the exact 1 - exp(-x) for small x. A measurement script for the
H200 (docs/h200/python-subjects-2026-12-01.md), not a battery check: the battery judges the tokens.

    python3 tools/scripts/h200_probes/exponential_floor.py OUT_DIR [LOG2_DRAWS]
"""

import json
import math
import os
import sys


def main(out_dir, log2_draws=35):
    import torch

    g = torch.Generator(device="cuda")
    g.manual_seed(20261201)
    step = 2.0**-24
    thresholds = [step * j for j in (1, 2, 4, 8, 16)] + [1e-6, 1e-5, 1e-4]
    counts = [0] * len(thresholds)
    chunk, draws = 1 << 28, 1 << log2_draws
    smallest, largest, distinct_small = math.inf, 0.0, set()
    for _ in range(draws // chunk):
        q = torch.empty(chunk, device="cuda").exponential_(1.0, generator=g)
        smallest = min(smallest, float(q.min()))
        largest = max(largest, float(q.max()))
        for i, x in enumerate(thresholds):
            counts[i] += int((q <= x).sum())
        distinct_small.update(torch.unique(q[q <= 4 * step]).tolist())
    rows = []
    for x, seen in zip(thresholds, counts):
        expected = draws * -math.expm1(-x)
        rows.append({"x": x, "seen": seen, "expected": expected, "ratio": seen / expected})
    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "draws": draws,
        "smallest": smallest,
        "largest": largest,
        "values_at_or_below_4_steps": sorted(distinct_small),
        "cdf_near_zero": rows,
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "exponential_floor.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
