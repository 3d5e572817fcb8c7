"""jax.random.categorical under jit(vmap) with one key per request: does a request's token
depend on the batch it is drawn in?

Each request has its own key (key(seed) folded with its position, as a JAX user keys a
request), so its noise is a function of the request alone; only the compiled program differs
with the batch size. This script draws R requests alone (batch 1) and inside batches of
several sizes, on the same rows and keys, in float32, bfloat16 and float16, and counts the
requests whose token changed. jax and numpy only (no samplecheck): a measurement script for
the H200 (docs/shipped/gpu-sessions-2026-12-04.md) that a JAX maintainer can run as it is.

    python3 tools/scripts/h200_probes/jax_batch_shapes.py OUT_DIR [V] [R]
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

BATCHES = (2, 3, 64, 65, 127, 128, 129, 1024, 4096)
SEED = 20261204


def draw(rows: Any, seeds: Any, positions: Any) -> Any:
    """Tokens of jit(vmap(categorical)) on these rows, one key per request."""
    import jax

    def one(row: Any, seed: Any, position: Any) -> Any:
        key = jax.random.fold_in(jax.random.key(seed), position)
        return jax.random.categorical(key, row)

    return jax.jit(jax.vmap(one))(rows, seeds, positions)


def changed(dtype: Any, v: int, requests: int) -> dict[str, Any]:
    """Requests 0..R-1 alone and then as the first R of each batch size (filled with more
    requests of the same kind): how many tokens differ from their batch-1 token."""
    import jax.numpy as jnp
    import numpy as np

    g = np.random.default_rng(SEED)
    most = max(BATCHES)
    logits = jnp.asarray(g.standard_normal((most, v)) * 2.0, dtype=dtype)
    seeds = jnp.asarray(g.integers(0, 2**31, most), dtype=jnp.uint32)
    positions = jnp.arange(most, dtype=jnp.uint32)
    alone = [int(draw(logits[i : i + 1], seeds[i : i + 1], positions[i : i + 1])[0]) for i in range(requests)]
    by_batch = {}
    for b in BATCHES:
        tokens = np.asarray(draw(logits[:b], seeds[:b], positions[:b]))[: min(b, requests)]
        diff = [i for i, t in enumerate(tokens.tolist()) if t != alone[i]]
        by_batch[str(b)] = {"compared": len(tokens), "differ": len(diff), "first": diff[:5]}
    return {"dtype": jnp.dtype(dtype).name, "v": v, "requests": requests, "batches": by_batch}


def main(out_dir: str, v: int = 151936, requests: int = 256) -> None:
    import jax
    import jax.numpy as jnp

    result = {
        "jax": jax.__version__,
        "device": str(jax.devices()[0]),
        "runs": [changed(d, v, requests) for d in (jnp.float32, jnp.bfloat16, jnp.float16)],
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "jax_batch_shapes.json"), "w") as f:
        json.dump(result, f, indent=1)
    for run in result["runs"]:
        counts = {b: f"{r['differ']}/{r['compared']}" for b, r in run["batches"].items()}
        print(run["dtype"], "differ from batch 1:", counts)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
