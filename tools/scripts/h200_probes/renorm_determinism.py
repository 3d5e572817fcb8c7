"""Bitwise determinism of FlashInfer's top_k_renorm_probs / top_p_renorm_probs (bug catalog
S16, FlashInfer #5034): run-to-run (the same call repeated) and batch invariance (a row's
output alone vs inside larger batches), compared by bits (torch.equal on the int32 view),
with is_deterministic False and True. A measurement script for the H200, not a battery
check: renormalisation returns probabilities, not tokens, so it fits no subject kind; the
tokens drawn from the renormalised rows are judged by the battery through the
"flashinfer.top_*_renorm_probs+sampling_from_probs" subjects.

    python3 tools/scripts/h200_probes/renorm_determinism.py OUT_DIR
"""

import json
import os
import sys
import time


def main(out_dir):
    import flashinfer.sampling as fi
    import torch

    torch.manual_seed(20261201)
    vocab, repeats, batch_sizes, probe_rows = 151936, 100, (1, 8, 64, 512, 4096), 8
    logits = torch.randn(max(batch_sizes), vocab, device="cuda") * 3.0
    probs = torch.softmax(logits, dim=-1)
    cases = [("top_k_renorm_probs", "top_k", k) for k in (1, 20, 1000)]
    cases += [("top_p_renorm_probs", "top_p", p) for p in (0.5, 0.9, 0.99)]
    results = []
    for fn_name, param, value in cases:
        fn = getattr(fi, fn_name)
        for deterministic in (False, True):

            def call(x, fn=fn, param=param, value=value, deterministic=deterministic):
                dtype = torch.int32 if param == "top_k" else torch.float32
                arg = torch.full((x.shape[0],), value, dtype=dtype, device="cuda")
                return fn(x, arg, is_deterministic=deterministic)

            start = time.perf_counter()
            batch = probs[:64]
            first = call(batch).view(torch.int32)
            differing_calls = sum(not torch.equal(call(batch).view(torch.int32), first) for _ in range(repeats - 1))
            alone = call(probs[:probe_rows]).view(torch.int32)
            variant_sizes = [
                m
                for m in batch_sizes
                if m >= probe_rows and not torch.equal(call(probs[:m])[:probe_rows].view(torch.int32), alone)
            ]
            singles = [
                r
                for r in range(probe_rows)
                if not torch.equal(call(probs[r : r + 1]).view(torch.int32), alone[r : r + 1])
            ]
            torch.cuda.synchronize()
            judged = [m for m in batch_sizes if m >= probe_rows]
            results.append(
                {
                    "function": fn_name,
                    param: value,
                    "is_deterministic": deterministic,
                    "vocab_size": vocab,
                    "run_to_run": f"{differing_calls} of {repeats - 1} repeated calls (batch 64) differ from the first",
                    "batch_invariance": f"rows 0..{probe_rows - 1} differ from their batch-{probe_rows} bits "
                    f"at batch sizes {variant_sizes or 'none'} of {judged}; alone "
                    f"(batch 1): rows {singles or 'none'} differ",
                    "differing_calls": differing_calls,
                    "variant_batch_sizes": variant_sizes,
                    "rows_differing_alone": singles,
                    "seconds": round(time.perf_counter() - start, 2),
                }
            )
            print(json.dumps(results[-1]), flush=True)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "renorm_determinism.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
