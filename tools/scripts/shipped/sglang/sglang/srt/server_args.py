"""samplecheck's shim for sglang.srt.server_args (tools/scripts/shipped/sglang.toml).

sampler.py reads the server's arguments in the Sampler class only; there is no server here.
"""

from typing import NoReturn


def get_global_server_args() -> NoReturn:
    raise RuntimeError("samplecheck's sglang shim: no server arguments (the Sampler class is not judged)")
