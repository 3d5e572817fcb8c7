"""Run by test_pytest_plugin.py: a "cuda" subject on a machine without torch or a CUDA device
is skipped, with one reason for all its items (failed with --require-device)."""

import pytest

from samplecheck_subject import numpy_samplers


def correct_sampler(batch):
    return numpy_samplers.make(None)(batch)


@pytest.mark.samplecheck(checks=["support", "replay"])
def test_cuda_subject(qualify):
    descriptor = numpy_samplers.descriptor("case.cuda")
    descriptor.memory_space = "cuda"
    qualify(correct_sampler, descriptor)
