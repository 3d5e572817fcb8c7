"""samplecheck's shim for vllm.config.model (tools/scripts/shipped/vllm.toml).

Upstream's is the model config (transformers, the model registry); the sampler module takes
from it only these two names, spelled as upstream spells them (vllm/config/model.py).
"""

from typing import Literal

LogprobsMode = Literal["raw_logits", "raw_logprobs", "processed_logits", "processed_logprobs"]
PROCESSED_LOGPROBS_MODES: tuple[LogprobsMode, ...] = ("processed_logits", "processed_logprobs")
