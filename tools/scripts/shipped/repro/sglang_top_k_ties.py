"""SGLang 0.5.10.post1, top_k_top_p_min_p_sampling_from_probs_torch: which of two tokens
tied at the top does top_k = 1 keep? samplecheck's ties check (docs/shipped/sglang.md) expected
the lower id (the ABI's lowest_index: the function keeps exactly k tokens) and saw the
higher one on the CPU. Needs SGLang (installed, or the tree of
tools/scripts/extract_shipped.py on PYTHONPATH), torch and numpy; nothing of samplecheck.

    python sglang_top_k_ties.py [cpu|cuda]
"""

import sys

import numpy as np
import torch
from sglang.srt.layers.sampler import top_k_top_p_min_p_sampling_from_probs_torch


def draws(row, k, n, device):
    """Token counts of n calls' worth of rows (one row per request, as SGLang's Sampler)."""
    probs = torch.tensor(row, dtype=torch.float32, device=device).repeat(n, 1)
    top_ks = torch.full((n,), k, dtype=torch.int32, device=device)
    ones, zeros = torch.ones(n, device=device), torch.zeros(n, device=device)
    tokens = top_k_top_p_min_p_sampling_from_probs_torch(probs, top_ks, ones, zeros, False, None, None)
    return np.bincount(tokens.cpu().numpy(), minlength=len(row))


def report(name, row, pair, n, device):
    counts = draws(row, 1, n, device)
    low, high = pair
    print(
        f"{name}: tokens {low} and {high} tied at p = {row[low]:g}, top_k = 1, {n} draws: "
        f"token {low} drawn {counts[low]}, token {high} drawn {counts[high]}"
    )
    print(
        f"    lowest_index expects token {low} {n} times and token {high} never "
        f"(p-value of any draw of token {high}: 0, its reference probability is 0)"
    )
    return counts[high] > 0


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    torch.manual_seed(0)
    print(f"torch {torch.__version__} on {device}")
    # The smallest row where it shows on the CPU: 17 tokens (torch sorts 16 or fewer another way).
    small = [0.5 / 17] * 17
    small[0] = small[16] = 0.25 + 0.5 / 17
    a = report("part 1, V = 17", small, (0, 16), 2000, device)
    # The battery's tied_groups row in small: a pair at 1/4, four tokens at 1/32, a flat tail.
    v = 32000
    row = [0.375 / (v - 6)] * v
    row[100] = row[24235] = 0.25
    for i in (5, 900, 17000, 31000):
        row[i] = 0.03125
    b = report("part 2, V = 32000", row, (100, 24235), 2000, device)
    print("reproduced: top-k keeps the higher id of a tie" if a or b else "not reproduced on this device")


if __name__ == "__main__":
    main()
