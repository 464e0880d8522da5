"""``WorkerSession`` over a fake channel: what the model is told about a lost or silent worker names the runtime's
own ``worker_noun`` (a container for the Docker runtime), not the built-in runtime's "the sandbox process"."""

from __future__ import annotations

import json

import pytest

from rlm_host.sandbox.protocol import SandboxError, SandboxInfo
from rlm_host.sandbox.session import Channel, WorkerSession


class FakeChannel(Channel):
    """A worker answering every request at once: ``dies`` makes its next write fail as if it had just exited,
    ``silent`` makes it never answer a 'get'."""

    def __init__(self, behaviour: str) -> None:
        super().__init__()
        self.behaviour = behaviour
        self.dead = False
        self._deliver(b'{"op": "ready"}')

    def write_line(self, data: bytes) -> None:
        message = json.loads(data)
        if self.behaviour == "dies" and message["op"] != "register":
            self.dead = True
            raise OSError("broken pipe")
        if self.behaviour == "silent" and message["op"] == "get":
            return
        reply = {"op": "result", "id": message["id"], "value": 1, "variables": {}}
        if message["op"] == "execute":
            reply["stdout"] = "ran\n"
        self._deliver(json.dumps(reply).encode())

    def exited(self) -> bool:
        return self.dead

    def describe_exit(self) -> str:
        return "exit code 137"

    def kill(self) -> None:
        self.dead = True


class ContainerSession(WorkerSession):
    info = SandboxInfo(name="fake", security_boundary=True, isolation="a fake container")
    worker_noun = "the test container"
    control_timeout = 0.2

    def __init__(self, *behaviours: str) -> None:
        super().__init__()
        self.behaviours = iter(behaviours)

    def _launch(self) -> Channel:
        return FakeChannel(next(self.behaviours))


def test_a_worker_that_dies_during_a_control_request_is_named_by_the_runtimes_noun():
    session = ContainerSession("ok", "ok")
    try:
        session.start()
        session.get_variable("x")
        session._res.channel.behaviour = "dies"  # type: ignore[union-attr]
        assert session.get_variable("x") == 1  # retried on a fresh worker
        result = session.execute("pass")
        assert "Cause: the test container died: exit code 137" in result.error
        assert "sandbox process" not in result.error
    finally:
        session.shutdown()


def test_a_worker_that_does_not_answer_a_control_request_is_named_by_the_runtimes_noun():
    session = ContainerSession("silent", "ok")
    try:
        with pytest.raises(SandboxError, match="did not answer 'get' in time; restarted"):
            session.get_variable("x")
        result = session.execute("pass")
        assert "Cause: the test container did not answer a 'get' request in time" in result.error
    finally:
        session.shutdown()
