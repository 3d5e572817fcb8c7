"""Collective subjects under the pytest plugin (run by test_collectives.py in a pytest of its
own): one item per collective check; the mutant's message_invariance item fails."""

import pytest

from samplecheck_subject.numpy_collectives import FIXED_ORDER, SIZE_SWITCH, fixed_order, size_switch


@pytest.mark.samplecheck(kind="collective")
def test_fixed_order(qualify):
    qualify(fixed_order, FIXED_ORDER, budget="quick")


@pytest.mark.samplecheck(kind="collective", checks=["message_invariance"])
def test_size_switch(qualify):
    qualify(size_switch, SIZE_SWITCH, budget="quick")
