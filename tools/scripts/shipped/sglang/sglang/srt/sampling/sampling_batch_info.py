"""samplecheck's shim for sglang.srt.sampling.sampling_batch_info (tools/scripts/shipped/sglang.toml).

sampler.py names SamplingBatchInfo in the Sampler class's annotations, which run when the
class is defined; the upstream module is the scheduler's batch state (penalizers,
grammars, the server's arguments), which the judged functions never reach.
"""


class SamplingBatchInfo:
    """A name for the annotation; the Sampler class is not judged."""
