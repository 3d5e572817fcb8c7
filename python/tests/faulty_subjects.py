"""Subjects that misbehave once: the first request a fresh process of the run receives
(counted across restarts in $SAMPLECHECK_TEST_FAULT_STATE) raises, exits with status 0,
hangs, replies garbage, returns a token outside [0, V) or scribbles on its input rows (then
answers correctly); every later request is answered by the correct numpy sampler. So exactly
one check must fail and the battery go on. $SAMPLECHECK_TEST_INPUTS is the descriptor's
`inputs` contract ("preserved" unless set): declared "mutated", the scribble is no fault.

    python -m samplecheck_subject.run faulty_subjects:subjects   (FAULT in $SAMPLECHECK_TEST_FAULT)
"""

import os
import struct
import sys
import time

import numpy as np

from samplecheck_subject import numpy_collectives, numpy_samplers

FAULTS = ("raise", "exit0", "hang", "garbage", "out_of_range", "scribble")
_correct = numpy_samplers.make(None)


def _requests_before():
    """How many requests of this run came before this one (the state file counts them)."""
    path = os.environ["SAMPLECHECK_TEST_FAULT_STATE"]
    seen = 0
    if os.path.exists(path):
        with open(path) as f:
            seen = int(f.read() or 0)
    with open(path, "w") as f:
        f.write(str(seen + 1))
    return seen


def _first_request_of_run():
    """True exactly once per run."""
    return _requests_before() == 0


# The faults every subject kind shares: the process raises, exits or hangs in its first call.
PROCESS_FAULT_TEXT = {
    "raise": "planted: the subject raised",
    "exit0": "status 0",
    "hang": "TIMEOUT",
}


def _process_fault(fault):
    if fault == "raise":
        raise RuntimeError("planted: the subject raised inside its first batch")
    if fault == "exit0":
        sys.stdout.flush()
        os._exit(0)  # mid-call, before any reply
    if fault == "hang":
        time.sleep(3600)


def faulty(b):
    fault = os.environ["SAMPLECHECK_TEST_FAULT"]
    seen = _requests_before()
    if fault == "fail_then_hang":  # --time-limit's test: a token out of range, then a hang
        if seen == 1:
            time.sleep(3600)
        fault = "out_of_range"
    if seen != 0:
        return _correct(b)
    _process_fault(fault)
    if fault == "garbage":
        fd = int(os.environ["SAMPLECHECK_CONTROL_FD"])
        body = b"this is not JSON"
        os.write(fd, struct.pack("<I", len(body)) + body)
        time.sleep(3600)  # samplecheck must judge the reply and stop this process itself
    if fault == "out_of_range":
        tokens, valid = _correct(b)
        tokens[0] = b.vocab_size
        valid[0] = 1
        return tokens, valid
    if fault == "scribble":
        tokens, valid = _correct(b)
        b.input[...] = 0  # the rows are a view of the shared region: this writes samplecheck's input
        return tokens, valid
    raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")


# A subject that declares routes (--descriptor) but never writes out_route: samplecheck must
# fail the call naming the row and the array, never judge its rows by a route it made up.
routes_unwritten = numpy_samplers.make(None)


def subjects():
    inputs = os.environ.get("SAMPLECHECK_TEST_INPUTS", "preserved")
    return [(faulty, numpy_samplers.descriptor(name="test.faulty", inputs=inputs))]


# The collective's faults on the first request of a run (the others answered in rank order):
# raise, exit0 and hang as above; short returns one element too few, disagree gives rank 1
# other bits than rank 0, unwritten writes every output but its last element itself.
COLLECTIVE_FAULTS = ("raise", "exit0", "hang", "short", "disagree", "unwritten")


def faulty_collective(p):
    fault = os.environ["SAMPLECHECK_TEST_FAULT"]
    result = numpy_collectives.fixed_order(p)
    if not _first_request_of_run():
        return result
    _process_fault(fault)
    if fault == "short":
        return result[:-1]
    if fault == "disagree":
        ranks = np.stack([result] * p.world_size)
        ranks[1, 0] = np.nextafter(ranks[1, 0], np.float32(np.inf))
        return ranks
    if fault == "unwritten":
        for out in p.outputs:
            out[:-1] = result[:-1]
        return None
    raise ValueError(f"unknown fault {fault!r}; known: {', '.join(COLLECTIVE_FAULTS)}")


def collective_subjects():
    return [(faulty_collective, numpy_collectives.FIXED_ORDER)]
