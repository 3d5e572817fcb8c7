"""samplecheck's shim for sglang.srt.layers.dp_attention (tools/scripts/shipped/sglang.toml).

sampler.py imports the data-parallel attention group for the Sampler class only.
"""

from typing import NoReturn


def is_dp_attention_enabled() -> bool:
    return False


def get_attention_tp_group() -> NoReturn:
    raise RuntimeError("samplecheck's sglang shim: no attention group (the Sampler class is not judged)")
