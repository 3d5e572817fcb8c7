"""samplecheck's shim for vllm/__init__.py (tools/scripts/shipped/vllm.toml).

vLLM's own runs vllm.env_override first (patches of torch's inductor and the process
environment for the engine) and resolves the engine's classes lazily; the judged modules
use neither. This tree holds only their import chain.
"""

from vllm.version import __version__, __version_tuple__  # noqa: F401 - upstream's version module, unmodified
