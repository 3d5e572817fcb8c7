"""samplecheck's shim for sglang.srt.utils.common (tools/scripts/shipped/sglang.toml).

Upstream's is 3,700 lines of server utilities importing much of the runtime; the judged
modules and their upstream imports take from it only these environment and platform
probes, spelled as upstream spells them, except is_cuda (below).
"""

import os

import torch


def get_bool_env_var(name: str, default: str = "false") -> bool:
    value = os.getenv(name, default).lower()
    if value not in ("true", "1", "false", "0"):
        raise ValueError(f"{name}={value!r} is neither true / 1 nor false / 0")
    return value in ("true", "1")


def crash_on_warnings() -> bool:
    return get_bool_env_var("SGLANG_IS_IN_CI")


def is_cuda() -> bool:
    # False, where upstream says torch.cuda.is_available(): sampler.py then imports
    # flashinfer.sampling and sgl_kernel (SGLang's compiled kernels) at module level, for the
    # Sampler class's flashinfer backend only. The judged torch functions do not read it.
    return False


def is_npu() -> bool:
    return hasattr(torch, "npu") and torch.npu.is_available()


def is_hip() -> bool:
    return torch.version.hip is not None


def is_xpu() -> bool:
    return hasattr(torch, "xpu") and torch.xpu.is_available()


def is_musa() -> bool:
    return getattr(torch.version, "musa", None) is not None


def is_cpu() -> bool:
    return os.getenv("SGLANG_USE_CPU_ENGINE", "0") == "1"


def cpu_has_amx_support() -> bool:
    return False


def get_device_sm() -> int:
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    return 0


def is_blackwell_supported() -> bool:
    return get_device_sm() >= 100


def calc_diff(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # Used only under SGLANG_BATCH_INVARIANT_OPS_ENABLE_MM_COMPARISON_TEST, which the
    # adapters leave off: refuse rather than stand in for a computation.
    raise RuntimeError("samplecheck's sglang shim: the matmul comparison test mode is not supported")
