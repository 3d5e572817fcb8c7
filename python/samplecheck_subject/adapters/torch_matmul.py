"""torch.mm and torch.nn.functional.linear in bf16 on the device (cuBLAS / cuBLASLt), as
matmul subjects: out = a @ weight.T (+ bias). torch.mm takes no bias, so a bias is added
after it in bf16, as a caller would write it; F.linear gets the bias itself (the nn.Linear
path, which hands it to the GEMM's epilogue). Neither declares launch configurations or
batch thresholds: cuBLAS's heuristics choose, and the battery's sweep over M sees them."""

from __future__ import annotations

from typing import Any

from ..batch import MatmulProblem
from ..descriptor import MatmulDescriptor
from ..serve import Roster
from . import common


def torch_mm(p: MatmulProblem) -> Any:
    import torch

    out = torch.mm(p.a, p.weight.t())
    return out if p.bias is None else out + p.bias


def f_linear(p: MatmulProblem) -> Any:
    import torch.nn.functional as F

    return F.linear(p.a, p.weight, p.bias)


DESCRIPTORS = {
    "torch.mm": (
        torch_mm,
        MatmulDescriptor(name="torch.mm", memory_space="cuda", description="torch.mm(a, weight.t()) (+ bias) in bf16"),
    ),
    "torch.nn.functional.linear": (
        f_linear,
        MatmulDescriptor(
            name="torch.nn.functional.linear", memory_space="cuda", description="F.linear(a, weight, bias) in bf16"
        ),
    ),
}


def subjects() -> Roster:
    unavailable = common.cuda_unavailable()
    if unavailable is None:
        common.warm_up()
    return list(DESCRIPTORS.values()), unavailable
