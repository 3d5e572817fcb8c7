#!/usr/bin/env python3
"""What samplecheck found in jax.random.categorical, shown with jax alone (no samplecheck):
jax.random.categorical(key, logits) is argmax(gumbel(key, shape, logits.dtype) + logits)
(jax/_src/random/core.py, _categorical), so the noise and the sum are in the logits' dtype.

1. A flat row (every logit equal) in bf16 / f16: the noise takes few distinct values, many
   tokens share the largest and argmax returns the lowest id: the draws pile on the first
   ids (samplecheck goodness_of_fit [bf16] / [f16], row 'flat unfiltered').
2. Two tokens `gap` apart: the smaller one's frequency against softmax's, per dtype.
3. Two tied logits at 2^24 in float32: gumbel + 2^24 rounds to even integers, the sums tie
   and argmax prefers the lower id (samplecheck ties [f32], row 'tied_groups logits +
   1.67772e+07'); softmax is shift-invariant, so the row is a fair coin.
4. mode="high" in bf16 / f16: x = high + 2^-nmant * low + tiny, and the noise
   -log(-log1p(-x)) is about -log(x) for small x: x = tiny (bf16: 1.2e-38, noise 87.3)
   comes once in 2^14 elements, so a row of thousands of tokens holds a few huge noise
   values, and the draw goes to one of them whatever the logits (samplecheck
   goodness_of_fit [bf16] / [f16] of jax.categorical.high, row 'zipf T=0.5').

    python3 tools/scripts/jax_categorical_evidence.py   (with jax installed: pip install "jax[cpu]")
"""

import math

import jax
import jax.numpy as jnp
import jaxlib


def draws(keys, row, dtype, mode=None):
    one = jax.jit(jax.vmap(lambda k, z: jax.random.categorical(k, z, mode=mode), in_axes=(0, None)))
    return one(keys, jnp.asarray(row, dtype))


def main():
    print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "device", jax.devices()[0])
    keys = jax.random.split(jax.random.key(20261203), 1 << 20)
    v = 32000
    for dtype in ("float32", "bfloat16", "float16"):
        t = draws(keys[:1024], [0.0] * v, dtype)
        print(
            f"1. flat row, V = {v}, {dtype}: 1024 draws, largest id drawn {int(t.max())}, "
            f"{int((t < v // 100).sum())} draws below id {v // 100} (softmax: {1024 / 100:.1f} expected)"
        )
    n = keys.shape[0]
    for gap in (3.0, 6.0, 9.0):
        p = 1 / (1 + math.exp(gap))
        got = {d: float(jnp.mean(draws(keys, [0.0, -gap], d) == 1)) for d in ("float32", "bfloat16", "float16")}
        print(
            f"2. gap {gap}: softmax p(token 1) = {p:.3e} (binomial sd {math.sqrt(p * (1 - p) / n):.1e} over {n} "
            "draws); " + ", ".join(f"{d} {f:.3e}" for d, f in got.items())
        )
    for c in (0.0, 2.0**22, 2.0**24):
        t = draws(keys, [c, c], "float32")
        print(
            f"3. two logits tied at {c:.0f}, float32: token 0 drawn {float(jnp.mean(t == 0)):.4f} of {n} (softmax: 0.5)"
        )

    v, n = 1000, 16384
    p = math.exp(10) / (math.exp(10) + v - 1)
    for mode in ("low", "high"):
        got = {
            d: float(jnp.mean(draws(keys[:n], [10.0] + [0.0] * (v - 1), d, mode) == 0))
            for d in ("float32", "bfloat16", "float16")
        }
        print(
            f"4. mode {mode}: token 0 ten above {v - 1} others, softmax p {p:.4f}, {n} draws: "
            + ", ".join(f"{d} {f:.4f}" for d, f in got.items())
        )


if __name__ == "__main__":
    main()
