"""vLLM 0.33.0, TopKTopPSampler.forward_native: which of four tokens tied at the top-p
boundary does top_p keep? samplecheck's ties check (docs/shipped/vllm.md) expected each tied
token to be drawn alike and saw two of them drawn, two never. Needs vLLM (installed, or
the tree of tools/scripts/extract_shipped.py on PYTHONPATH), torch and numpy; nothing of
samplecheck.

    python vllm_top_p_ties.py [cpu|cuda]
"""

import sys

import numpy as np
import torch
from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler

V, PAIR, QUARTET, TOP_P, N = 32000, (100, 7000), (4570, 15992, 20744, 24906), 0.55, 2000


def row():
    """Two tokens of probability 1/4, four of 1/32, the rest flat (samplecheck's tied_groups)."""
    probs = np.full(V, (1 - 2 / 4 - 4 / 32) / (V - 6), dtype=np.float64)
    probs[list(PAIR)] = 1 / 4
    probs[list(QUARTET)] = 1 / 32
    return np.log(probs).astype(np.float32)


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    print(f"torch {torch.__version__} on {device}")
    sampler = TopKTopPSampler.__new__(TopKTopPSampler)
    torch.nn.Module.__init__(sampler)
    sampler.logprobs_mode, sampler.use_fp64_gumbel = "raw_logprobs", False
    logits = torch.from_numpy(row()).to(device).repeat(N, 1)  # one row per request, as vLLM's Sampler
    generators = {i: torch.Generator(device=device).manual_seed(i) for i in range(N)}
    p = torch.full((N,), TOP_P, dtype=torch.float32, device=device)
    tokens, _ = sampler.forward_native(logits, generators, None, p)
    counts = np.bincount(tokens.cpu().numpy(), minlength=V)
    print(
        f"top_p = {TOP_P}: the pair covers 0.5, so the quartet (p 1/32 each, equal logits) decides; "
        f"{N} draws, the quartet drew " + ", ".join(f"token {t}: {counts[t]}" for t in QUARTET)
    )
    drawn = [t for t in QUARTET if counts[t] > 0]
    if 0 < len(drawn) < len(QUARTET):
        print(f"reproduced: tokens with equal logits kept unequally ({len(drawn)} of {len(QUARTET)} drawn)")
        return 1
    print("not reproduced: the quartet's tokens were kept alike")
    return 0


if __name__ == "__main__":
    sys.exit(main())
