"""samplecheck's shim for vllm._aiter_ops (tools/scripts/shipped/vllm.toml).

Upstream's registers ROCm's aiter kernels (and imports its attention ops); the sampler
module reads rocm_aiter_ops.is_enabled() in TopKTopPSampler.__init__ on ROCm only.
"""


class rocm_aiter_ops:  # upstream's name
    @staticmethod
    def is_enabled() -> bool:
        return False
