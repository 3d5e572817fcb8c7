"""Serve a Python callable (numpy, torch, FlashInfer) as a samplecheck subject.

    from samplecheck_subject import serve, SamplerDescriptor
    serve(fn, SamplerDescriptor(name="mylib.sampler", input_kind="probs", ...))

and run `samplecheck qualify --exec "python that_file.py"`. See docs/python.md.
"""

from .batch import MatmulProblem, SampleBatch, SubjectError
from .descriptor import DescriptorError, MatmulDescriptor, SamplerDescriptor
from .serve import serve, serve_subjects

__all__ = [
    "serve",
    "serve_subjects",
    "SamplerDescriptor",
    "MatmulDescriptor",
    "SampleBatch",
    "MatmulProblem",
    "SubjectError",
    "DescriptorError",
]
