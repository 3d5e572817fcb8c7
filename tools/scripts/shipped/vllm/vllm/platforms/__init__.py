"""samplecheck's shim for vllm/platforms/__init__.py (tools/scripts/shipped/vllm.toml).

Upstream's picks a platform class through NVML, amdsmi and entry-point plugins, and matches
substrings against the installed distribution's version (importlib.metadata), which fails
here: the wheel is extracted, not installed. Ours probes torch.cuda and answers the
platform questions the judged modules ask (is_cuda, is_cpu, num_compute_units, ...): CUDA
where torch sees a device, else the CPU platform, as vLLM's CudaPlatform and CpuPlatform
answer them.
"""

import os
import platform as _platform
from typing import Any

import torch

from vllm.version import __version__

from .interface import CpuArchEnum, DeviceCapability


def vllm_version_matches_substr(substr: str) -> bool:
    return substr in __version__


class _Platform:
    def __init__(self) -> None:
        self.cuda = torch.cuda.is_available()
        self.device_type = "cuda" if self.cuda else "cpu"
        self.device_name = self.device_type
        self.dispatch_key = "CUDA" if self.cuda else "CPU"

    def is_cuda(self) -> bool:
        return self.cuda

    def is_cuda_alike(self) -> bool:
        return self.cuda

    def is_cpu(self) -> bool:
        return not self.cuda

    def is_rocm(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False

    def is_tpu(self) -> bool:
        return False

    def get_device_capability(self, device_id: int = 0) -> DeviceCapability | None:
        if not self.cuda:
            return None
        return DeviceCapability(*torch.cuda.get_device_capability(device_id))

    def has_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        current = self.get_device_capability(device_id)
        if current is None:
            return False
        if isinstance(capability, tuple):
            return current >= DeviceCapability(*capability)
        return current.to_int() >= capability

    def is_device_capability_family(self, capability: int, device_id: int = 0) -> bool:
        current = self.get_device_capability(device_id)
        return current is not None and current.to_int() // 10 == capability // 10

    def num_compute_units(self, device_id: int | None = 0) -> int:
        if self.cuda:
            return int(torch.cuda.get_device_properties(device_id or 0).multi_processor_count)
        return os.cpu_count() or 1

    def get_device_name(self, device_id: int = 0) -> str:
        return torch.cuda.get_device_name(device_id) if self.cuda else "cpu"

    def get_cpu_architecture(self) -> CpuArchEnum:
        machine = _platform.machine().lower()
        if machine in ("x86_64", "amd64", "i386", "i686"):
            return CpuArchEnum.X86
        if machine.startswith(("arm", "aarch")):
            return CpuArchEnum.ARM
        return CpuArchEnum.OTHER

    def is_pin_memory_available(self) -> bool:
        return self.cuda

    def is_integrated_gpu(self, device_id: int = 0) -> bool:
        return False


current_platform = _Platform()
