"""Run by test_pytest_plugin.py (the source tree, ctest) and installed/test_installed.py (the
wheel, CI) in a pytest of their own, with the samplecheck plugin: each test is one item per
check. A correct sampler passes; the same sampler with the S03 defect (seeds read at element
0), built by a factory, fails per_request_seeds; a bound method passes.
test_device_cases.py holds the subject whose device is absent."""

import pytest

from samplecheck_subject import numpy_samplers


def correct_sampler(batch):
    return numpy_samplers.make(None)(batch)


@pytest.mark.samplecheck(checks=["support", "per_request_seeds"])
def test_correct(qualify):
    qualify(correct_sampler, numpy_samplers.descriptor("case.correct"))


@pytest.mark.samplecheck(checks=["support", "per_request_seeds"])
def test_seed_element_zero(qualify):
    sampler = numpy_samplers.make("S03")  # a closure from a factory: served from a fork
    qualify(sampler, numpy_samplers.descriptor("case.seed_element_zero"))


class Sampler:
    def __init__(self):
        self._sample = numpy_samplers.make(None)

    def sample(self, batch):
        return self._sample(batch)


@pytest.mark.samplecheck(checks=["support"])
def test_bound_method(qualify):
    qualify(Sampler().sample, numpy_samplers.descriptor("case.bound_method"))
