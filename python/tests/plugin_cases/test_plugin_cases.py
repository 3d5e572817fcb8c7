"""Run by test_pytest_plugin.py in its own pytest, with the samplecheck plugin: one subject
that passes and one (the S03 mutant) that must fail with the battery's table."""

from samplecheck_subject import numpy_samplers

_correct = numpy_samplers.make(None)
_seed_element_zero = numpy_samplers.make("S03")


def correct_sampler(batch):
    return _correct(batch)


def seed_element_zero_sampler(batch):
    return _seed_element_zero(batch)


def test_correct_sampler_qualifies(qualify):
    qualify(correct_sampler, numpy_samplers.descriptor("case.correct"), checks=["support", "per_request_seeds"])


def test_seed_element_zero_sampler_qualifies(qualify):
    qualify(seed_element_zero_sampler, numpy_samplers.descriptor("case.seed_element_zero"),
            checks=["per_request_seeds"])
