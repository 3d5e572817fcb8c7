"""samplecheck's shim for vllm/config/__init__.py (tools/scripts/shipped/vllm.toml).

Upstream's imports every engine config; the sampler module imports only vllm.config.model
(our shim beside this file).
"""
