"""JAX's jax.random.categorical, imported from the installed jax / jaxlib wheels (never
copied), served as samplecheck subjects:

    samplecheck qualify --exec "python -m samplecheck_subject.run \\
        samplecheck_subject.adapters.jax_categorical:subjects"

Each output row draws `jax.random.categorical(key, logits / temperature)` over its input
row, with the key derived from the request as a JAX user derives one per request and step:
`key = jax.random.fold_in(jax.random.key(seed), position)`. JAX's key takes a 32-bit seed
unless jax_enable_x64 is on (jax.random.key(2**32 + 5) is key(5) by default), so the 64-bit
seed goes in as key(its low word) folded with its high word, and the 64-bit position as its
low then its high word: the noise is a function of (seed, position) alone, the declared
rng_policy "request_keyed" (seed[r] the request's seed, offset[r] its position).

What jax does, and so what is declared (jax/_src/random/core.py, `_categorical`):
`jnp.argmax(gumbel(key, shape, logits.dtype) + logits)`: the Gumbel noise is drawn in the
logits' own dtype (bf16 / f16 logits get bf16 / f16 noise), and NaN, +Inf and all -Inf
rows come back as a token, never flagged (argmax picks the first NaN, the first +Inf, or
token 0 when every logit is -Inf): degenerate_rows "undefined". No filter but temperature,
so no tie rule. Temperature: `logits / t` with t a Python float in jax stays in the logits'
dtype (weak typing); the adapter divides by t cast to that dtype, the same arithmetic.
t = 0 (the ABI's greedy) is `jnp.argmax(logits)`, as a caller special-cases it (dividing by
0 gives NaN rows, whose first NaN argmax would return).

Subjects: "jax.categorical" (the default PRNG, threefry2x32, and the default Gumbel mode
"low"), "jax.categorical.rbg" and "jax.categorical.unsafe_rbg" (the other key
implementations, jax.random.key(seed, impl=...), as jax_default_prng_impl would select),
"jax.categorical.high" (mode="high", JAX's higher-resolution Gumbel). The device is jax's
default (a GPU where jaxlib's CUDA plugin finds one, else the CPU); the batch arrives on the
host (memory_space "host"); its input rows go to the device once per call and each chunk of
output rows gathers its rows there. The hello records jax's and jaxlib's versions
and the sha256 of jax's random modules that ran, each checked against the wheel's RECORD.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any, Literal, Optional

import numpy as np

from .. import shipped
from ..batch import SampleBatch
from ..descriptor import DTYPES, Dtype, SamplerDescriptor
from ..script_call import ScriptCall
from ..serve import SamplerPair as Pair

# Gumbel noise elements per jitted call: rows padded to a power of two (few compilations).
# A GPU takes a larger chunk: each call's dispatch and synchronisation, not its arithmetic,
# bound the draws per second there.
CHUNK_ELEMENTS = 1 << 22
ACCELERATOR_CHUNK_ELEMENTS = 1 << 26
# The random modules whose code draws the tokens, recorded in the hello with their sha256.
RAN_FILES = (
    "jax/random.py",
    "jax/_src/random/core.py",
    "jax/_src/random/prng.py",
    "jax/_src/random/threefry2x32.py",
    "jax/_src/random/rbg.py",
)
# jax's key implementations, and its Gumbel modes (None: jax's default).
KeyImpl = Literal["threefry2x32", "rbg", "unsafe_rbg"]
GumbelMode = Optional[Literal["high"]]
# (subject name, key implementation, Gumbel mode)
VARIANTS: tuple[tuple[str, KeyImpl, GumbelMode], ...] = (
    ("jax.categorical", "threefry2x32", None),
    ("jax.categorical.rbg", "rbg", None),
    ("jax.categorical.unsafe_rbg", "unsafe_rbg", None),
    ("jax.categorical.high", "threefry2x32", "high"),
)


def key_words(seed: np.ndarray, position: np.ndarray) -> np.ndarray:
    """[n, 4] uint32 per request: seed low, seed high, position low, position high."""
    seed, position = np.asarray(seed, dtype=np.uint64), np.asarray(position, dtype=np.uint64)
    mask, shift = np.uint64(0xFFFFFFFF), np.uint64(32)
    words = (seed & mask, seed >> shift, position & mask, position >> shift)
    return np.stack(words, axis=1).astype(np.uint32)


def request_key(words: Any, impl: KeyImpl) -> Any:
    """jax.random.key(seed low, impl) folded with seed high, position low and position high."""
    import jax

    key = jax.random.key(words[0], impl=impl)
    for i in (1, 2, 3):
        key = jax.random.fold_in(key, words[i])
    return key


def row_bucket(rows: int, vocab: int, chunk: int = CHUNK_ELEMENTS) -> int:
    """Rows per jitted call: the next power of two of `rows`, at most `chunk` elements / V."""
    cap = max(1, chunk // max(1, vocab))
    cap = 1 << (cap.bit_length() - 1)
    return power_of_two(min(cap, rows))


def power_of_two(n: int) -> int:
    """The next power of two of n (1 for n <= 1)."""
    return 1 << max(0, n - 1).bit_length()


def chunk_elements() -> int:
    """Gumbel elements per jitted call on jax's default device."""
    import jax

    return CHUNK_ELEMENTS if jax.default_backend() == "cpu" else max(CHUNK_ELEMENTS, ACCELERATOR_CHUNK_ELEMENTS)


_compiled: dict[tuple[str, str | None], Any] = {}


def draw_fn(impl: KeyImpl, mode: GumbelMode) -> Any:
    """The jitted draw of a chunk: per output row its key words and the index of its input
    row, the call's input rows (on the device) and their temperatures -> token."""
    if (impl, mode) not in _compiled:
        import jax
        import jax.numpy as jnp

        def one(words: Any, logits: Any, t: Any) -> Any:
            greedy = t == 0
            scaled = logits / jnp.where(greedy, 1, t).astype(logits.dtype)
            token = jax.random.categorical(request_key(words, impl), scaled, mode=mode)
            return jnp.where(greedy, jnp.argmax(logits), token)

        def chunk(words: Any, index: Any, rows: Any, t: Any) -> Any:
            return jax.vmap(one)(words, jnp.take(rows, index, axis=0), jnp.take(t, index))

        _compiled[impl, mode] = jax.jit(chunk)
    return _compiled[impl, mode]


def logits_rows(b: SampleBatch) -> np.ndarray:
    """The input rows in their own dtype (bf16 / f16 bits viewed as ml_dtypes' types)."""
    import jax.numpy as jnp

    kinds = {"f32": np.float32, "bf16": jnp.bfloat16, "f16": np.float16}
    return np.asarray(b.input).view(kinds[b.input_dtype])


def device_rows(b: SampleBatch) -> tuple[Any, Any]:
    """The call's input rows and temperatures, copied to jax's device once per call; padded
    to a power of two of rows (with row 0) so that the jitted draw compiles for few shapes."""
    import jax

    rows = logits_rows(b).reshape(b.num_input_rows, b.vocab_size)
    t = np.ones(b.num_input_rows, np.float32) if b.temperature is None else np.asarray(b.temperature, np.float32)
    pad = power_of_two(b.num_input_rows) - b.num_input_rows
    rows = np.concatenate([rows, np.repeat(rows[:1], pad, 0)])
    return jax.device_put(rows), jax.device_put(np.concatenate([t, np.repeat(t[:1], pad)]))


def sample(impl: KeyImpl, mode: GumbelMode) -> Callable[[SampleBatch], Any]:
    def fn(b: SampleBatch) -> Any:
        import jax

        n = b.num_output_rows
        rows, t = device_rows(b)
        source = np.arange(n) if b.row_index is None else np.asarray(b.row_index, dtype=np.int64)
        source = source.astype(np.int32)
        words = key_words(b.seed, b.offset)
        draw, step = draw_fn(impl, mode), row_bucket(n, b.vocab_size, chunk_elements())
        pending = []
        for start in range(0, n, step):
            m = min(step, n - start)
            pad = step - m  # same shape every chunk: the last one repeats its first request
            idx = np.concatenate([source[start : start + m], np.repeat(source[start : start + 1], pad)])
            w = np.concatenate([words[start : start + m], np.repeat(words[start : start + 1], pad, 0)])
            pending.append((start, m, draw(w, idx, rows, t)))  # dispatched; gathered below
        tokens = np.empty(n, dtype=np.int32)
        for start, m, out in pending:
            tokens[start : start + m] = np.asarray(jax.device_get(out))[:m]
        return tokens, None

    fn.__name__ = f"categorical_{impl}_{mode or 'low'}"
    return fn


def declared_dtypes() -> tuple[Dtype, ...]:
    """f32, bf16 and f16 (jax takes all three); $SAMPLECHECK_JAX_DTYPES (e.g. "f32" or
    "bf16,f16") narrows them for a run on a slow machine: every check runs once per dtype."""
    given = os.environ.get("SAMPLECHECK_JAX_DTYPES")
    dtypes = tuple(d for d in DTYPES if not given or d in given.split(","))
    if not dtypes:
        raise ValueError(f"SAMPLECHECK_JAX_DTYPES = {given!r} names none of f32, bf16, f16")
    return dtypes


def descriptors() -> list[Pair]:
    pairs: list[Pair] = []
    dtypes = declared_dtypes()
    for name, impl, mode in VARIANTS:
        how = f"key impl {impl}" + (f", mode={mode!r}" if mode else "")
        pairs.append(
            (
                sample(impl, mode),
                SamplerDescriptor(
                    name=name,
                    input_kind="logits",
                    input_dtypes=dtypes,
                    filters=("temperature",),
                    rng_policy="request_keyed",
                    degenerate_rows="undefined",
                    memory_space="host",
                    description=f"jax.random.categorical(fold_in(key(seed), position), logits / T), {how}",
                ),
            )
        )
    return pairs


def unavailable() -> str | None:
    """None when jax imports and has a device, else the reason (samplecheck then skips)."""
    try:
        import jax
    except ImportError as e:
        return f"jax is not installed ({e})"
    try:
        jax.devices()
    except RuntimeError as e:
        return f"jax has no usable device: {e}"
    return None


def record() -> None:
    """jax's and jaxlib's versions, jax's device, and the sha256 of each file of RAN_FILES,
    checked against the jax wheel's RECORD (a modified installation is refused)."""
    import jax

    entries = {"jax device": f"{jax.default_backend()}: {jax.devices()[0].device_kind}"}
    entries.update(shipped.installed("jaxlib", ()))
    entries.update(shipped.installed("jax", RAN_FILES))
    shipped.record_entries(entries)


def subjects() -> tuple[list[Pair], str | None]:
    pairs = descriptors()
    reason = unavailable()
    if reason is None:
        record()
    return pairs, reason


DESCRIPTORS = {d.name: (fn, d) for fn, d in descriptors()}


# Standalone reproduction scripts (samplecheck_subject.repro_script): jax.random.categorical
# as the adapter calls it, on the record's row in the dtype it was sent in (DTYPE), draw i
# keyed by (seed, position i).
_SCRIPT_IMPORTS = """import jax
import jax.numpy as jnp  # jax's own, unmodified"""

_SCRIPT_DRAW = """

def key_of_words(seed_words, position_words):
    \"\"\"The adapter's request_key: key(seed low), folded with seed high, position low and high.\"\"\"
    key = jax.random.key(seed_words[0], impl=IMPL)
    for word in (seed_words[1], position_words[0], position_words[1]):
        key = jax.random.fold_in(key, word)
    return key


def draw(row, params, n, seed, device):
    dtype = {"bf16": jnp.bfloat16, "f16": jnp.float16}.get(DTYPE, jnp.float32)
    dev = jax.devices(device)[0] if device else jax.devices()[0]
    logits = jax.device_put(jnp.asarray(row.astype(dtype)), dev)  # exact: the row was sent so
    t = float(params["temperature"])
    if t == 0:
        return np.full(n, int(jnp.argmax(logits)))
    scaled = logits / t  # a Python float: jax keeps the logits' dtype (weak typing)
    seed_words = (seed & 0xFFFFFFFF, jnp.uint32(seed >> 32))
    keys = jax.vmap(lambda p: key_of_words(seed_words, (p, jnp.uint32(0))))(jnp.arange(n, dtype=jnp.uint32))
    one = jax.jit(jax.vmap(lambda k: jax.random.categorical(k, scaled, mode=MODE)))
    return np.concatenate([np.asarray(one(keys[s:s + 4096])) for s in range(0, n, 4096)])
"""


# batch_invariance's script (repro_batch): the requests in one batch as the adapter serves it,
# jitted calls of a power of two of rows (at most CHUNK_ELEMENTS logits, ACCELERATOR_CHUNK_ELEMENTS
# off the CPU) under jax.vmap over the requests' keys, a short call padded with its first request.
_SCRIPT_BATCH = """
CHUNK_ELEMENTS = {chunk}
ACCELERATOR_CHUNK_ELEMENTS = {accelerator}


{row_bucket}

{power_of_two}

def rows_per_call(rows, vocab, device):
    \"\"\"row_bucket at the adapter's chunk_elements() for the device the script runs on.\"\"\"
    cpu = (device or jax.default_backend()) == "cpu"
    return row_bucket(rows, vocab, CHUNK_ELEMENTS if cpu else max(CHUNK_ELEMENTS, ACCELERATOR_CHUNK_ELEMENTS))


def draw_requests(row, params, requests, device):
    \"\"\"As the adapter's draw_fn: jax.vmap over each request's key words, its logits taken from
    the call's rows (here the one row) and divided by its temperature inside the map.\"\"\"
    dtype = {{"bf16": jnp.bfloat16, "f16": jnp.float16}}.get(DTYPE, jnp.float32)
    dev = jax.devices(device)[0] if device else jax.devices()[0]
    rows = jax.device_put(jnp.asarray(row.astype(dtype))[None, :], dev)
    t = jax.device_put(jnp.full((1,), float(params["temperature"]), jnp.float32), dev)

    def one(words, logits, temperature):
        greedy = temperature == 0
        scaled = logits / jnp.where(greedy, 1, temperature).astype(logits.dtype)
        token = jax.random.categorical(key_of_words(words[:2], words[2:]), scaled, mode=MODE)
        return jnp.where(greedy, jnp.argmax(logits), token)

    chunk = jax.jit(lambda w, i: jax.vmap(one)(w, jnp.take(rows, i, axis=0), jnp.take(t, i)))
    step, tokens = rows_per_call(len(requests), row.size, device), []
    for start in range(0, len(requests), step):
        part = [(seed, offset) for seed, _, offset in requests[start : start + step]]  # keyed (seed, offset)
        part += [part[0]] * (step - len(part))
        words = np.array(part, dtype=np.uint64).view(np.uint32).reshape(-1, 4)  # seed lo, hi, offset lo, hi
        out = chunk(jnp.asarray(words), jnp.zeros(step, jnp.int32))
        tokens.append(np.asarray(out)[: min(step, len(requests) - start)])
    return np.concatenate(tokens)
"""


def _script_call(name: str, impl: str, mode: str | None) -> ScriptCall:
    constants = f"\nIMPL = {impl!r}\nMODE = {mode!r}\n"
    batch = _SCRIPT_BATCH.format(
        chunk=CHUNK_ELEMENTS,
        accelerator=ACCELERATOR_CHUNK_ELEMENTS,
        row_bucket=inspect.getsource(row_bucket).replace("{", "{{").replace("}", "}}"),
        power_of_two=inspect.getsource(power_of_two).replace("{", "{{").replace("}", "}}"),
    )
    return ScriptCall(
        what=f"jax.random.categorical (key impl {impl}, mode {mode or 'low'}), as "
        "samplecheck_subject.adapters.jax_categorical calls it",
        imports=_SCRIPT_IMPORTS,
        code=constants + _SCRIPT_DRAW,
        packages=("jax", "numpy"),
        run="python3 {script} [--device cpu|gpu]  (with jax installed: pip install jax[cpu])",
        batch=batch,
    )


SCRIPT_CALLS = {name: _script_call(name, impl, mode) for name, impl, mode in VARIANTS}
