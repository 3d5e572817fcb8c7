"""samplecheck's shim for sglang/__init__.py (tools/scripts/shipped/sglang.toml).

SGLang's own imports the frontend language (sglang.lang) and its HTTP backend, which the
runtime's sampler does not use; this tree holds only the judged modules' import chain.
"""

from sglang.version import __version__  # noqa: F401 - upstream's version module, unmodified
