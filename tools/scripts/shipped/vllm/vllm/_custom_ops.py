"""samplecheck's shim for vllm._custom_ops (tools/scripts/shipped/vllm.toml).

Upstream's binds vLLM's compiled extension (vllm._C, not carried). The batch-invariant
matmul reads one device attribute through it (vllm.utils.mem_utils.get_max_shared_memory_bytes,
which picks the persistent matmul's tile configuration); ours asks torch for the same
attribute, cudaDevAttrMaxSharedMemoryPerBlockOptin.
"""

import torch


def get_max_shared_memory_per_block_device_attribute(gpu: int) -> int:
    return int(torch.cuda.get_device_properties(gpu).shared_memory_per_block_optin)
