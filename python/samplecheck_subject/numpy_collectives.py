"""Sum all-reduces in numpy for the protocol's collective requests, each summing in float32:

  numpy.allreduce.fixed_order          every element in rank order 0, 1, ..., w - 1: its bits
                                       follow its own rank values alone (declares size and run)
  numpy.allreduce.ring                 an emulation of NCCL's ring all-reduce: the message goes in
                                       loops of world_size chunks whose length follows the message
                                       size, and each chunk's sum starts at the chunk's rank, so an
                                       element's order follows count and its offset (declares run)
  numpy.allreduce.fixed_order:size_switch  the mutant: rank order below SWITCH_COUNT elements, the
                                       balanced tree over ranks from there on (NCCL picks its
                                       algorithm by message size), while declaring size invariance

The ring's chunk rule is the one kernels/collective/cpu_collectives.cpp emulates NCCL's with.
"""

from __future__ import annotations

import numpy as np

from .batch import CollectiveProblem
from .descriptor import CollectiveDescriptor
from .serve import Pair

# NCCL's ring moves a message in loops of world_size chunks of at most this many elements.
RING_CHUNK_ELEMENTS = 32768
# The mutant sums messages of this many elements or more by the tree.
SWITCH_COUNT = 2048
MAX_WORLD_SIZE = 64


def rank_order(inputs: np.ndarray) -> np.ndarray:
    """Each element summed over ranks 0, 1, ..., in float32."""
    acc = inputs[0].copy()
    for rank in inputs[1:]:
        acc += rank
    return acc


def tree_order(inputs: np.ndarray) -> np.ndarray:
    """Each element summed by the balanced tree over ranks: each node split at the largest
    power of two below its width (sc_collective, SC_INVARIANT_TREE)."""
    width = len(inputs)
    if width == 1:
        return inputs[0].copy()
    mid = 1 << ((width - 1).bit_length() - 1)
    return tree_order(inputs[:mid]) + tree_order(inputs[mid:])


def ring_first_ranks(count: int, world: int) -> np.ndarray:
    """The rank that starts each element's sum in a ring over a message of `count`."""
    first = np.empty(count, dtype=np.int64)
    start = 0
    while start < count:
        chunk = min(RING_CHUNK_ELEMENTS, -(-(count - start) // world))
        end = min(count, start + chunk * world)
        first[start:end] = np.arange(end - start) // chunk
        start = end
    return first


def fixed_order(p: CollectiveProblem) -> np.ndarray:
    return rank_order(p.inputs)


def ring(p: CollectiveProblem) -> np.ndarray:
    world, count = p.world_size, p.count
    first = ring_first_ranks(count, world)
    ranks = (first[None, :] + np.arange(world)[:, None]) % world
    return rank_order(p.inputs[ranks, np.arange(count)[None, :]])


def size_switch(p: CollectiveProblem) -> np.ndarray:
    return tree_order(p.inputs) if p.count >= SWITCH_COUNT else rank_order(p.inputs)


FIXED_ORDER = CollectiveDescriptor(
    name="numpy.allreduce.fixed_order",
    max_world_size=MAX_WORLD_SIZE,
    invariants=("size", "run"),
    description="numpy: float32 sum in rank order",
)
RING = CollectiveDescriptor(
    name="numpy.allreduce.ring",
    max_world_size=MAX_WORLD_SIZE,
    invariants=("run",),
    description="numpy: NCCL's ring all-reduce emulated (chunks follow the message size)",
)
SIZE_SWITCH = CollectiveDescriptor(
    name="numpy.allreduce.fixed_order:size_switch",
    max_world_size=MAX_WORLD_SIZE,
    invariants=("size", "run"),
    description="mutant: the balanced tree from 2048 elements on, rank order below",
)


def subjects() -> list[Pair]:
    return [(fixed_order, FIXED_ORDER), (ring, RING), (size_switch, SIZE_SWITCH)]
