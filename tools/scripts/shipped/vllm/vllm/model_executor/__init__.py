"""samplecheck's shim for vllm/model_executor/__init__.py (tools/scripts/shipped/vllm.toml).

Upstream's imports the model parameters (vllm.model_executor.parameter, which reaches the
distributed groups); the judged modules import only submodules of this package.
"""
