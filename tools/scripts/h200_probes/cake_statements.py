"""What the battery does not reach of FlashInfer's cake sampler (docs/shipped.md, "FlashInfer
0.7.2.post1's cake sampler"), measured on the H200 by calling
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


def main(out_dir: str) -> int:
    import flashinfer.cake_sampling as cake
    import torch

    torch.manual_seed(20261203)
    vocab = 151936
    dev = "cuda"
    results: dict[str, Any] = {"flashinfer_cake_file": cake.__file__, "torch": torch.__version__,
                               "device": torch.cuda.get_device_name()}

    def ks(n: int, k: int) -> Any:
        return torch.full((n,), k, dtype=torch.int32, device=dev)

    def ps(n: int, p: float) -> Any:
        return torch.full((n,), p, dtype=torch.float32, device=dev)

    def draw(probs: Any, k: int, p: float, seed: int = 7, offset: int = 0, **kw: Any) -> Any:
        n = probs.shape[0]
        return cake.top_k_top_p_sampling_from_probs(probs, ks(n, k), ps(n, p), top_k_max=k, philox_seed=seed,
                                                    philox_offset=offset, **kw)

    probs = torch.softmax(torch.randn(4096, vocab, device=dev) * 3.0, dim=-1)

    # Routes (S8).
    cases = [("f32 k=50", probs[:8], 50, "pipeline"), ("f32 k=1024", probs[:8], 1024, "pipeline"),
             ("f32 k=1025", probs[:8], 1025, "fallback:top_k_gt_slab"),
             ("f32 k=V", probs[:8], vocab, "fallback:top_k_disabled"),
             ("f32 k=0", probs[:8], 0, "fallback:top_k_disabled"),
             ("bf16 k=50", probs[:8].bfloat16(), 50, "fallback:dtype"),
             ("f16 k=50", probs[:8].half(), 50, "fallback:dtype"),
             ("f32 non-contiguous k=50", probs[:8, ::2], 50, "fallback:layout")]
    results["routes"] = [{"case": c, "route": cake.cake_sampling_route(x, ks(x.shape[0], k), k), "expected": want}
                         for c, x, k, want in cases]
    for r in results["routes"]:
        r["holds"] = r["route"] == r["expected"]

    # Determinism (S2).
    det: list[dict[str, Any]] = []
    for k, p in ((50, 0.9), (1000, 0.95), (1024, 1.0)):
        batch = probs[:64].contiguous()
        a, b = draw(batch, k, p), draw(batch, k, p)
        det.append({"what": f"same call twice, k={k} p={p}", "holds": bool(torch.equal(a, b))})
        nopdl = draw(batch, k, p, enable_pdl=False)
        det.append({"what": f"enable_pdl False vs True, k={k} p={p}", "holds": bool(torch.equal(a, nopdl))})
        static_k, static_p = ks(64, k), ps(64, p)
        out = torch.empty(64, dtype=torch.int32, device=dev)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm-up outside capture, as CUDA graphs need
            cake.top_k_top_p_sampling_from_probs(batch, static_k, static_p, top_k_max=k, philox_seed=7,
                                                 philox_offset=0, out=out)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            cake.top_k_top_p_sampling_from_probs(batch, static_k, static_p, top_k_max=k, philox_seed=7,
                                                 philox_offset=0, out=out)
        replays = []
        for _ in range(3):
            out.fill_(-1)
            graph.replay()
            torch.cuda.synchronize()
            replays.append(out.clone())
        det.append({"what": f"stream launch vs 3 CUDA-graph replays, k={k} p={p}",
                    "holds": all(bool(torch.equal(a, r)) for r in replays)})
        alone = draw(probs[:1].contiguous(), k, p)
        differ = []
        for n in (1, 2, 8, 64, 65, 132, 133, 512, 1024, 4096):
            tokens = draw(probs[:n].contiguous(), k, p)
            if n >= 64 and not torch.equal(tokens[:64], a):
                differ.append(n)
            if not torch.equal(tokens[:1], alone):
                differ.append(n)
        det.append({"what": f"rows 0-63 (and row 0) in batches of 1-4096, same seed, k={k} p={p}",
                    "holds": not differ, "batch sizes that differ": sorted(set(differ))})
    results["determinism"] = det

    # NaN / negative / -0.0 / +inf / all zero on the pipeline (S3-S5), k = 50.
    base = probs[4095].clone()
    top = torch.argsort(base, descending=True)[:60]
    rows, labels = [], []
    for label, idx, value in (("NaN at the 3 largest", top[:3], float("nan")),
                              ("-0.25 at the 3 largest", top[:3], -0.25),
                              ("-0.0 at the 3 largest", top[:3], -0.0),
                              ("-inf at the 3 largest", top[:3], float("-inf"))):
        row = base.clone()
        row[idx] = value
        rows.append(row)
        labels.append(label)
    inf_row = base.clone()
    inf_tokens = [11, 5000, 77777]
    inf_row[inf_tokens] = float("inf")
    rows.append(inf_row)
    labels.append(f"+inf at {inf_tokens}")
    rows.append(torch.zeros(vocab, device=dev))
    labels.append("all zero")
    zero = []
    for label, row in zip(labels, rows):
        batch = row.unsqueeze(0).expand(4096, vocab).contiguous()
        route = cake.cake_sampling_route(batch, ks(4096, 50), 50)
        tokens = draw(batch, 50, 1.0, seed=11)
        values = row[tokens.long()]
        seen = torch.unique(tokens).tolist()
        item: dict[str, Any] = {"row": label, "route": route, "distinct tokens": len(seen), "first tokens": seen[:8]}
        if label.startswith("+inf"):
            counts = {t: int((tokens == t).sum()) for t in inf_tokens}
            item.update(holds=set(seen) <= set(inf_tokens), counts=counts)
        elif label == "all zero":
            item.update(holds=None, note="S5: 'its smallest slab index'; the token is recorded, not judged")
        else:
            item.update(holds=bool(torch.isfinite(values).all() and (values > 0).all()))
        zero.append(item)
    results["zero"] = zero

    # Ties at the k-th on the pipeline (S1): 10 tokens tied at the k-th (k = 5), 3 inside the top 5.
    row = torch.full((vocab,), 1e-7, device=dev)
    row[[100, 200]] = 0.2
    tied = [300, 400, 500, 600, 700, 800, 900, 1000, 1100, 1200]
    row[tied] = 0.05
    row /= row.sum()
    batch = row.unsqueeze(0).expand(4096, vocab).contiguous()
    tokens = draw(batch, 5, 1.0, seed=13)
    seen = sorted(set(torch.unique(tokens).tolist()))
    results["ties"] = {"row": "0.2 at 100, 200; 0.05 at 300..1200 (10 tied), k = 5",
                       "route": cake.cake_sampling_route(batch, ks(4096, 5), 5),
                       "expected support": [100, 200, 300, 400, 500], "seen": seen,
                       "holds": set(seen) <= {100, 200, 300, 400, 500}}
    results["seconds"] = time.perf_counter() - start
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "cake_statements.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))
    return 0


start = time.perf_counter()

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
