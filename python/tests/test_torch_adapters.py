"""The torch filtered adapters filter each input row once and draw each output from its
row's filtered row; SGLang and vLLM lay a batch out as one row per output. The two must
give the same tokens, token for token, on the same generator: this test compares them on
batches laid out as the battery lays them out (few input rows, many outputs through
row_index), with ties and every filter on. It needs torch and a CUDA device; run as a
script (ctest does), it exits 77 (skipped) without them.
"""

import sys
import types

import numpy as np
import pytest

from samplecheck_subject.adapters import common, torch_samplers

UNAVAILABLE = common.cuda_unavailable()
if UNAVAILABLE is not None and __name__ != "__main__":
    pytest.skip(UNAVAILABLE, allow_module_level=True)


def _rows(vocab, torch):
    """Four rows: a smooth one, one with a tie group of 8 at its top, one peaked, one flat."""
    g = np.random.default_rng(20261201)
    smooth = g.standard_normal(vocab) * 2.0
    ties = smooth.copy()
    ties[np.argsort(-ties)[:8]] = ties.max()
    peaked = smooth.copy()
    peaked[3] = smooth.max() + 8.0
    flat = np.zeros(vocab)
    logits = np.stack([smooth, ties, peaked, flat]).astype(np.float32)
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    return torch.from_numpy(logits).cuda(), torch.from_numpy(probs.astype(np.float32)).cuda()


def _batch(inputs, outputs, torch, top_k, top_p, min_p=None, temperature=None):
    rows = inputs.shape[0]
    row_index = (np.arange(outputs) % rows).astype(np.int32)
    seeds = np.full(outputs, 7, dtype=np.uint64)
    host = {
        "seed": seeds,
        "subsequence": np.arange(outputs, dtype=np.uint64),
        "offset": np.zeros(outputs, dtype=np.uint64),
        "row_index": row_index,
    }

    def param(values, dtype):
        return None if values is None else torch.tensor(values, dtype=dtype, device="cuda")

    return types.SimpleNamespace(
        input=inputs,
        vocab_size=inputs.shape[1],
        num_input_rows=rows,
        num_output_rows=outputs,
        row_index=torch.from_numpy(row_index).cuda(),
        host=host,
        top_k=param(top_k, torch.int32),
        top_p=param(top_p, torch.float32),
        min_p=param(min_p, torch.float32),
        temperature=param(temperature, torch.float32),
    )


CASES = [
    (
        "torch.sglang_filtered",
        "probs",
        {"top_k": [20, 4, 1000, 151936], "top_p": [0.9, 1.0, 0.5, 0.3], "min_p": [0.0, 0.05, 0.0, 0.0]},
    ),
    (
        "torch.vllm_filtered",
        "logits",
        {"top_k": [20, 4, 1000, 151936], "top_p": [0.9, 1.0, 0.5, 0.3], "temperature": [1.0, 0.7, 0.0, 1.3]},
    ),
]


@pytest.mark.parametrize("name,kind,params", CASES, ids=[c[0] for c in CASES])
def test_filtering_once_per_input_row_gives_the_per_output_tokens(name, kind, params):
    import torch

    descriptor = torch_samplers.DESCRIPTORS[name][1]
    filter_rule, draw_rule, refuses = {
        "torch.sglang_filtered": (torch_samplers.sglang_filter, torch_samplers.sglang_draw, True),
        "torch.vllm_filtered": (torch_samplers.vllm_filter, torch_samplers.vllm_draw, False),
    }[name]
    assert descriptor.name == name
    once = torch_samplers._served(filter_rule, draw_rule, refuses)
    per_output = torch_samplers._served(filter_rule, draw_rule, refuses, per_output_row=True)
    logits, probs = _rows(151936, torch)
    inputs = probs if kind == "probs" else logits
    for outputs in (4, 4099, 20000):
        batch = _batch(inputs, outputs, torch, **params)
        a, _ = once(batch)
        b, _ = per_output(batch)
        differing = int((a != b).sum())
        assert differing == 0, f"{name}: {differing} of {outputs} tokens differ between the layouts"
        assert int(a.min()) >= 0 and int(a.max()) < inputs.shape[1]


if __name__ == "__main__":
    if UNAVAILABLE is not None:
        print(f"SKIP: {UNAVAILABLE}")
        sys.exit(77)
    sys.exit(pytest.main([__file__, "-q", "-ra", "-p", "no:cacheprovider"]))
