"""samplecheck's shim for sglang.srt.layers.logits_processor (tools/scripts/shipped/sglang.toml).

sampler.py names LogitsProcessorOutput in Sampler.forward's annotations, which run when
the class is defined; the upstream module is the model's logits layer (vocabulary-parallel
gathers), which the judged functions never reach.
"""


class LogitsProcessorOutput:
    """A name for the annotation; the Sampler class is not judged."""
