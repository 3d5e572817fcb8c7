"""samplecheck's shim for sglang.srt.distributed (tools/scripts/shipped/sglang.toml).

sampler.py imports get_tp_group for the Sampler class, which syncs tokens across the
tensor-parallel group; the judged functions take no group, so none exists here.
"""

from typing import NoReturn


def get_tp_group() -> NoReturn:
    raise RuntimeError("samplecheck's sglang shim: no tensor-parallel group (the Sampler class is not judged)")
