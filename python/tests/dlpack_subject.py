"""The numpy sampler behind an array type that only speaks DLPack (as a CuPy or JAX array
would): its returned tokens and flags reach the shared region through __dlpack__."""

from samplecheck_subject import numpy_samplers

_correct = numpy_samplers.make(None)


class DLPackOnly:
    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def sample(batch):
    tokens, valid = _correct(batch)
    return DLPackOnly(tokens), DLPackOnly(valid)


def subjects():
    return [(sample, numpy_samplers.descriptor(name="test.dlpack"))]
