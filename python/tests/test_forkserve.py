"""The --connect side of the package (forkserve.py) against a Python stand-in for samplecheck
(connect_host.py): each connection is served by a child of this process, which runs the very
closure this process holds, answers the connection (so samplecheck, killing the answer's
sender, ends that connection alone) and is reaped."""

import json
import os
import platform
import sys

import numpy as np

from conftest import HERE
from samplecheck_subject import SamplerDescriptor
from samplecheck_subject.forkserve import ForkServer


def test_each_connection_is_served_by_a_forked_child_running_the_closure(tmp_path):
    answer = [3, 1]  # state only this process's closure has: no import by name could find it

    def sample(batch):
        return np.array(answer[: batch.num_output_rows]), None

    descriptor = SamplerDescriptor(name="case.fork", input_kind="probs", input_dtypes=("f32",))
    env = dict(os.environ)
    with open(tmp_path / "out", "w+") as out, open(tmp_path / "err", "w+") as err:
        with ForkServer([(sample, descriptor)]) as server:
            status = server.run([sys.executable, os.path.join(HERE, "connect_host.py"), server.path], env, out, err)
        assert not server._children  # every child reaped
        err.seek(0)
        assert status == 0, err.read()
    seen = json.loads((tmp_path / "out").read_text())
    assert "server_is_the_listener" not in seen  # samplecheck would kill pytest on a hang
    assert seen["reply"]["status"] == 0 and seen["tokens"] == [3, 1] and seen["valid"] == [1, 1]
    assert [s["name"] for s in seen["hello"]["subjects"]] == ["case.fork"]
    assert seen["hello"]["environment"]["python"] == platform.python_version()
    assert seen["hello"]["environment"]["packages"]["numpy"] == np.__version__
    assert seen["first_pid"] != os.getpid() and seen["killed_ends"]
    assert seen["second_pid"] not in (os.getpid(), seen["first_pid"])
    assert seen["second_hello"]["subjects"] == seen["hello"]["subjects"] and seen["second_close"] == 0
