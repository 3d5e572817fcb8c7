"""pytest examples/python: one item per check of samplecheck's battery (docs/python.md)."""

from topk_topp import DESCRIPTOR, sample


def test_topk_topp(qualify):
    qualify(sample, DESCRIPTOR)
