"""Stands in for `samplecheck qualify --connect PATH` in test_forkserve.py: connects to the
subject served from forks of the test's process, asks for one batch, kills the server as
samplecheck kills a hung subject (the sender of the answer byte), connects again as samplecheck
does to restart it, and prints what it saw as one JSON object."""

import json
import os
import signal
import sys

import numpy as np

from protocol_host import Host

ROWS = np.array([[0.5, 0.25, 0.25, 0.0], [0.1, 0.2, 0.3, 0.4]], np.float32)


def main(path):
    first = Host(connect=path)
    reply, tokens, valid = first.sample("case.fork", ROWS, seed=[1, 2], offset=[0, 0])
    first_pid = first.server_pid
    if first_pid in (os.getppid(), first.listener_pid()):  # killing the test's process would end the run
        print(json.dumps({"server_is_the_listener": first_pid}))
        return
    os.kill(first_pid, signal.SIGKILL)
    killed_ends = first._exactly(1) is None  # the killed child held the only copy of the connection
    second = Host(connect=path)
    seen = {
        "hello": first.hello,
        "reply": reply,
        "tokens": tokens.tolist(),
        "valid": valid.tolist(),
        "first_pid": first_pid,
        "killed_ends": killed_ends,
        "second_pid": second.server_pid,
        "second_hello": second.hello,
    }
    seen["second_close"] = second.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
