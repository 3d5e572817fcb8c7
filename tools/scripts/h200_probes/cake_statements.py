"""What the battery does not reach of FlashInfer's cake sampler (docs/shipped/flashinfer-cake.md,
"FlashInfer 0.7.2.post1's cake sampler"), measured on the H200 by calling
flashinfer.cake_sampling.top_k_top_p_sampling_from_probs directly:

  routes       cake_sampling_route's answer for requests that S8 assigns (k 50 / 1024 / 1025 / V,
               k off, bf16, f16, a non-contiguous view), beside the expected one
  determinism  S2: the same call twice; stream launch vs CUDA-graph replay (explicit
               philox_seed / philox_offset, three replays); enable_pdl on vs off; a row's token
               in slot r across batch sizes 1 to 4096 (which change the stage-1 variant) with
               the same seed and offset; compared by value
  zero         S3-S5 on the pipeline route (k = 50): rows with NaN, negative, -0.0 entries
               draw only tokens of positive mass; a row with +inf entries draws only them
               (counts per +inf token over 4096 draws); the all-zero row's token
  ties         S1 on the pipeline route: a tie group straddling the k-th keeps its lowest ids

A measurement, not a battery check: each item says "holds" true or false and what was seen.

    python3 tools/scripts/h200_probes/cake_statements.py OUT_DIR     # writes OUT_DIR/cake_statements.json
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

VOCAB = 151936


class Probe:
    """The cake module, torch and the call helpers every statement's probe shares."""

    def __init__(self) -> None:
        import flashinfer.cake_sampling as cake
        import torch

        self.cake: Any = cake
        self.torch: Any = torch
        self.dev = "cuda"
        torch.manual_seed(20261203)
        self.probs = torch.softmax(torch.randn(4096, VOCAB, device=self.dev) * 3.0, dim=-1)

    def ks(self, n: int, k: int) -> Any:
        return self.torch.full((n,), k, dtype=self.torch.int32, device=self.dev)

    def ps(self, n: int, p: float) -> Any:
        return self.torch.full((n,), p, dtype=self.torch.float32, device=self.dev)

    def draw(self, probs: Any, k: int, p: float, seed: int = 7, offset: int = 0, **kw: Any) -> Any:
        n = probs.shape[0]
        return self.cake.top_k_top_p_sampling_from_probs(
            probs, self.ks(n, k), self.ps(n, p), top_k_max=k, philox_seed=seed, philox_offset=offset, **kw
        )

    def route(self, probs: Any, k: int) -> str:
        return str(self.cake.cake_sampling_route(probs, self.ks(probs.shape[0], k), k))


def probe_routes(pr: Probe) -> list[dict[str, Any]]:
    """S8: cake_sampling_route's answer beside the one the statement assigns."""
    probs = pr.probs
    cases = [
        ("f32 k=50", probs[:8], 50, "pipeline"),
        ("f32 k=1024", probs[:8], 1024, "pipeline"),
        ("f32 k=1025", probs[:8], 1025, "fallback:top_k_gt_slab"),
        ("f32 k=V", probs[:8], VOCAB, "fallback:top_k_disabled"),
        ("f32 k=0", probs[:8], 0, "fallback:top_k_disabled"),
        ("bf16 k=50", probs[:8].bfloat16(), 50, "fallback:dtype"),
        ("f16 k=50", probs[:8].half(), 50, "fallback:dtype"),
        ("f32 non-contiguous k=50", probs[:8, ::2], 50, "fallback:layout"),
    ]
    out = []
    for case, x, k, want in cases:
        route = pr.route(x, k)
        out.append({"case": case, "route": route, "expected": want, "holds": route == want})
    return out


def graph_replays(pr: Probe, batch: Any, k: int, p: float) -> list[Any]:
    """The call captured in a CUDA graph (explicit seed and offset), replayed three times."""
    torch = pr.torch
    static_k, static_p = pr.ks(64, k), pr.ps(64, p)
    out = torch.empty(64, dtype=torch.int32, device=pr.dev)

    def call() -> None:
        pr.cake.top_k_top_p_sampling_from_probs(
            batch, static_k, static_p, top_k_max=k, philox_seed=7, philox_offset=0, out=out
        )

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up outside capture, as CUDA graphs need
        call()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    replays = []
    for _ in range(3):
        out.fill_(-1)
        graph.replay()
        torch.cuda.synchronize()
        replays.append(out.clone())
    return replays


def batch_sizes_that_differ(pr: Probe, first: Any, k: int, p: float) -> list[int]:
    """Batch sizes where rows 0-63 (or row 0 alone) draw other tokens with the same seed."""
    torch = pr.torch
    alone = pr.draw(pr.probs[:1].contiguous(), k, p)
    differ = []
    for n in (1, 2, 8, 64, 65, 132, 133, 512, 1024, 4096):
        tokens = pr.draw(pr.probs[:n].contiguous(), k, p)
        if n >= 64 and not torch.equal(tokens[:64], first):
            differ.append(n)
        if not torch.equal(tokens[:1], alone):
            differ.append(n)
    return sorted(set(differ))


def probe_determinism(pr: Probe) -> list[dict[str, Any]]:
    """S2: the same call twice, PDL on and off, graph replay, batch sizes 1-4096."""
    torch = pr.torch
    det: list[dict[str, Any]] = []
    for k, p in ((50, 0.9), (1000, 0.95), (1024, 1.0)):
        batch = pr.probs[:64].contiguous()
        a, b = pr.draw(batch, k, p), pr.draw(batch, k, p)
        det.append({"what": f"same call twice, k={k} p={p}", "holds": bool(torch.equal(a, b))})
        nopdl = pr.draw(batch, k, p, enable_pdl=False)
        det.append({"what": f"enable_pdl False vs True, k={k} p={p}", "holds": bool(torch.equal(a, nopdl))})
        replays = graph_replays(pr, batch, k, p)
        det.append(
            {
                "what": f"stream launch vs 3 CUDA-graph replays, k={k} p={p}",
                "holds": all(bool(torch.equal(a, r)) for r in replays),
            }
        )
        differ = batch_sizes_that_differ(pr, a, k, p)
        det.append(
            {
                "what": f"rows 0-63 (and row 0) in batches of 1-4096, same seed, k={k} p={p}",
                "holds": not differ,
                "batch sizes that differ": differ,
            }
        )
    return det


INF_TOKENS = [11, 5000, 77777]


def degenerate_rows(pr: Probe) -> list[tuple[str, Any]]:
    """NaN, negative, -0.0 and -inf at a row's 3 largest entries; +inf entries; an all-zero row."""
    base = pr.probs[4095].clone()
    top = pr.torch.argsort(base, descending=True)[:60]
    rows = []
    for label, value in (
        ("NaN at the 3 largest", float("nan")),
        ("-0.25 at the 3 largest", -0.25),
        ("-0.0 at the 3 largest", -0.0),
        ("-inf at the 3 largest", float("-inf")),
    ):
        row = base.clone()
        row[top[:3]] = value
        rows.append((label, row))
    inf_row = base.clone()
    inf_row[INF_TOKENS] = float("inf")
    rows.append((f"+inf at {INF_TOKENS}", inf_row))
    rows.append(("all zero", pr.torch.zeros(VOCAB, device=pr.dev)))
    return rows


def probe_zero(pr: Probe) -> list[dict[str, Any]]:
    """S3-S5 on the pipeline route (k = 50): what 4096 draws of each degenerate row give."""
    torch = pr.torch
    zero = []
    for label, row in degenerate_rows(pr):
        batch = row.unsqueeze(0).expand(4096, VOCAB).contiguous()
        tokens = pr.draw(batch, 50, 1.0, seed=11)
        values = row[tokens.long()]
        seen = torch.unique(tokens).tolist()
        item: dict[str, Any] = {
            "row": label,
            "route": pr.route(batch, 50),
            "distinct tokens": len(seen),
            "first tokens": seen[:8],
        }
        if label.startswith("+inf"):
            counts = {t: int((tokens == t).sum()) for t in INF_TOKENS}
            item.update(holds=set(seen) <= set(INF_TOKENS), counts=counts)
        elif label == "all zero":
            item.update(holds=None, note="S5: 'its smallest slab index'; the token is recorded, not judged")
        else:
            item.update(holds=bool(torch.isfinite(values).all() and (values > 0).all()))
        zero.append(item)
    return zero


def probe_ties(pr: Probe) -> dict[str, Any]:
    """S1 on the pipeline: 10 tokens tied at the k-th (k = 5), 3 of them inside the top 5."""
    row = pr.torch.full((VOCAB,), 1e-7, device=pr.dev)
    row[[100, 200]] = 0.2
    row[[300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200]] = 0.05
    row /= row.sum()
    batch = row.unsqueeze(0).expand(4096, VOCAB).contiguous()
    tokens = pr.draw(batch, 5, 1.0, seed=13)
    seen = sorted(set(pr.torch.unique(tokens).tolist()))
    return {
        "row": "0.2 at 100, 200; 0.05 at 300..1200 (10 tied), k = 5",
        "route": pr.route(batch, 5),
        "expected support": [100, 200, 300, 400, 500],
        "seen": seen,
        "holds": set(seen) <= {100, 200, 300, 400, 500},
    }


def main(out_dir: str) -> int:
    start = time.perf_counter()
    pr = Probe()
    results: dict[str, Any] = {
        "flashinfer_cake_file": pr.cake.__file__,
        "torch": pr.torch.__version__,
        "device": pr.torch.cuda.get_device_name(),
    }
    results["routes"] = probe_routes(pr)
    results["determinism"] = probe_determinism(pr)
    results["zero"] = probe_zero(pr)
    results["ties"] = probe_ties(pr)
    results["seconds"] = time.perf_counter() - start
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "cake_statements.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
