"""Serve a Python callable (numpy, torch, FlashInfer) as a samplecheck subject, and judge it
from pytest.

    from samplecheck_subject import serve, SamplerDescriptor
    serve(fn, SamplerDescriptor(name="mylib.sampler", input_kind="probs", ...))

and run `samplecheck qualify --exec "python that_file.py"`; or, in a test, call the pytest
plugin's `qualify(fn, descriptor)` fixture. See docs/python.md.
"""

from ._version import __version__
from .batch import CollectiveProblem, MatmulProblem, SampleBatch, SubjectError
from .descriptor import CollectiveDescriptor, DescriptorError, MatmulDescriptor, SamplerDescriptor
from .serve import serve, serve_subjects

__all__ = [
    "CollectiveDescriptor",
    "CollectiveProblem",
    "DescriptorError",
    "MatmulDescriptor",
    "MatmulProblem",
    "SampleBatch",
    "SamplerDescriptor",
    "SubjectError",
    "__version__",
    "serve",
    "serve_subjects",
]
