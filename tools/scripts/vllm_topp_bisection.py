#!/usr/bin/env python3
"""vLLM's Triton top-p mask on a failed check's row, in Triton's interpreter on the CPU: as
shipped, and with its pivot search allowed more than 18 halvings.

    TRITON_INTERPRET=1 python3 tools/scripts/vllm_topp_bisection.py RECORD.json [--tree DIR] [--probs]

RECORD.json: a goodness_of_fit (or tail) record whose evidence keeps the row (row_data) and
its top_p (params); --probs where the row holds probabilities (their logs are sent). DIR:
vLLM's extracted tree (tools/scripts/extract_shipped.py with tools/scripts/shipped/vllm.toml;
default build/shipped/vllm). Needs torch, triton, numpy and regex. Prints, for the row
alone, the tokens vLLM's Triton top-p keeps and their mass: the monolithic kernel's
standalone top-p path (CUDA batches above 64 rows) as shipped, the split-row pipeline (CUDA
batches of up to 64 rows without top-k) as shipped, then the monolithic kernel from a
temporary copy of the tree whose `num_iters >= 18` caps read 64 (its provenance rewritten in
the copy; the shipped tree is never touched). Beside each: the IN tokens it drops and the OUT
tokens it keeps, by the reference's status of each token that the record carries.
docs/shipped/gpu-sessions-2026-12-06.md (session 17) gives the figures.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

KERNEL = "vllm/v1/sample/ops/topk_topp_triton.py"
REPO = Path(__file__).resolve().parents[2]


def interpreter_ranges() -> None:
    """Triton's interpreter yields Python ints from tl.range; the kernel calls .to on its row
    index, so each index becomes an interpreter tensor (the loop is otherwise unchanged)."""
    import triton.runtime.interpreter as interpreter

    core = interpreter._patch_lang_core

    def patched(lang: Any, scope: Any) -> None:
        core(lang, scope)
        plain = lang.range
        scope.set_attr(lang, "range", lambda *a, **k: (interpreter._implicit_cvt(i) for i in plain(*a, **k)))

    interpreter._patch_lang_core = patched


def uncapped_copy(tree: Path, folder: Path) -> Path:
    """The tree with the kernel's iteration caps at 64, its provenance naming the new digest."""
    copy = folder / "vllm"
    shutil.copytree(tree, copy)
    kernel = copy / "site" / KERNEL
    old = hashlib.sha256(kernel.read_bytes()).hexdigest()
    text = kernel.read_text()
    if "num_iters >= 18" not in text:
        raise SystemExit(f"{kernel}: no `num_iters >= 18` cap to raise (another vLLM version?)")
    kernel.write_text(text.replace("num_iters >= 18", "num_iters >= 64"))
    new = hashlib.sha256(kernel.read_bytes()).hexdigest()
    provenance = copy / "provenance.json"
    provenance.write_text(provenance.read_text().replace(old, new))
    return copy


def kept(tree: Path, logits: np.ndarray, top_p: float, split: bool = False) -> np.ndarray:
    """The mask vLLM's Triton top-p leaves on the row (True: kept): apply_top_k_top_p_triton
    (off CUDA, the monolithic kernel, which on CUDA serves batches above 64 rows), or with
    `split` the split-row pipeline that serves CUDA batches of up to 64 rows without top-k."""
    import torch

    from samplecheck_subject import shipped

    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        del sys.modules[name]  # each tree imports its own copy
    (module,) = shipped.load(tree, ["vllm.v1.sample.ops.topk_topp_triton"])
    row = torch.from_numpy(logits.copy()).unsqueeze(0)
    p = torch.tensor([top_p], dtype=torch.float32)
    if split:  # its workspace sized by the H100's and H200's 132 SMs
        module._apply_topp_split(row, None, p, float("-inf"), 132)
        return torch.isfinite(row[0]).numpy()
    return torch.isfinite(module.apply_top_k_top_p_triton(row, None, p)[0]).numpy()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path)
    parser.add_argument("--tree", type=Path, default=REPO / "build" / "shipped" / "vllm")
    parser.add_argument("--probs", action="store_true", help="the row holds probabilities (a probs subject's record)")
    args = parser.parse_args()
    if os.environ.get("TRITON_INTERPRET") != "1":
        print("set TRITON_INTERPRET=1 (the kernel runs in Triton's interpreter)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(REPO / "python"))
    interpreter_ranges()
    try:
        row, top_p = read_row(args.record, args.probs)
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as error:
        print(
            f"{args.record}: not a record with evidence.row_data and evidence.params.top_p ({error!r})", file=sys.stderr
        )
        return 2
    logits, status, label = row
    probs = np.exp(logits.astype(np.float64) - logits.max())
    probs /= probs.sum()
    counts = ", ".join(f"{(status == c).sum()} {name}" for c, name in (("I", "IN"), ("B", "BOUNDARY"), ("O", "OUT")))
    print(f"row '{label}': V = {logits.size}, top_p {top_p!r}; the reference: {counts}")
    with tempfile.TemporaryDirectory() as folder:
        shipped_runs = [("as shipped", args.tree, False), ("split pipeline, as shipped", args.tree, True)]
        # The copy last: a tree once imported stays first on the path.
        for what, tree, split in [*shipped_runs, ("caps at 64", uncapped_copy(args.tree, Path(folder)), False)]:
            mask = kept(tree, logits, top_p, split)
            dropped, out = (status == "I") & ~mask, (status == "O") & mask
            print(
                f"{what}: kept {mask.sum()} tokens (mass {probs[mask].sum():.6f}); IN tokens dropped "
                f"{dropped.sum()} (mass {probs[dropped].sum():.3g}), OUT tokens kept {out.sum()}"
            )
    return 0


def read_row(record: Path, holds_probs: bool) -> tuple[tuple[np.ndarray, np.ndarray, str], float]:
    """The record's row as logits, the reference's status of each token (I, B, O: the record's
    row_data.status, samplecheck's reference), its label, and its top_p. Data only."""
    evidence = json.loads(record.read_text())["evidence"]
    row = evidence["row_data"]
    values = np.frombuffer(base64.b64decode(row["values_f32"], validate=True), "<f4")
    status = np.frombuffer(str(row["status"]).encode("ascii"), "S1").astype(str)
    if status.size != values.size:
        raise ValueError(f"row_data.status holds {status.size} tokens, values_f32 {values.size}")
    with np.errstate(divide="ignore"):  # a probability of 0 is a logit of -inf
        logits = np.log(values) if holds_probs else values
    return (logits, status, str(row["label"])), float(evidence["params"]["top_p"])


if __name__ == "__main__":
    sys.exit(main())
