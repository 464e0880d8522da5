"""The docker runtime keeps the sandbox protocol: the contract suite (``rlm_host.testing.SandboxContract``) in a
real container of a real engine (no mocks), and what is particular to containers."""

from __future__ import annotations

import pytest

from rlm_host import SandboxError, SandboxServices
from rlm_host.sdk.sandbox import SandboxLimits
from rlm_host.testing import SandboxContract

from docker_fixtures import containers_of, docker_client, docker_engine  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


class TestDockerSandbox(SandboxContract):
    name = "docker"
    security_boundary = True
    isolation_mentions = ("no network",)
    killed_worker_report = ("SIGKILL", "NOT run|died during this step")

    @pytest.fixture(autouse=True)
    def _engine(self, docker_engine):
        """Every test needs the engine with the sandbox image (found or started once per test session)."""

    def make_sandbox(self, limits: SandboxLimits):
        from rlm_sandbox_docker.runtime import DockerSandbox

        return DockerSandbox(limits=limits)

    def kill_worker(self, sandbox) -> None:
        sandbox.container.kill()
        sandbox.container.wait(timeout=10)

    def worker_id(self, sandbox) -> str | None:
        return sandbox.container_id

    # -- the contract's restarts, and the engine's view of them -------------------------------------------
    def test_timeout_restarts_and_keeps_host_state(self, sandbox, containers_of):
        super().test_timeout_restarts_and_keeps_host_state(sandbox)
        assert [c.id for c in containers_of(sandbox)] == [sandbox.container_id]  # the old one is removed

    def test_exiting_the_worker_is_a_crash_and_restarts(self, sandbox, containers_of):
        super().test_exiting_the_worker_is_a_crash_and_restarts(sandbox)
        assert [c.id for c in containers_of(sandbox)] == [sandbox.container_id]  # the dead one is removed

    # -- particular to containers ---------------------------------------------------------------------------
    def test_the_factory_makes_a_docker_sandbox(self):
        from rlm_sandbox_docker.runtime import DockerSandbox, create

        session = create({"memory": "600m"}, SandboxServices(limits=self.limits))
        assert isinstance(session, DockerSandbox)
        assert session.settings.memory == "600m" and session.limits == self.limits
        session.shutdown()

    def test_a_container_hung_in_a_control_request_is_called_a_container(self):
        """A container that hangs while answering ``get`` (a ``repr`` that sleeps) is replaced after
        ``control_timeout``, and the next step names it as a container (the contract checks one that dies)."""
        from rlm_sandbox_docker.runtime import DockerSandbox
        from rlm_sandbox_docker.settings import DockerSettings

        session = DockerSandbox(DockerSettings(control_timeout=2), limits=self.limits)
        try:
            session.execute("import time\nclass Hangs:\n    def __repr__(self):\n        time.sleep(60)\nh = Hangs()")
            with pytest.raises(SandboxError, match="did not answer 'get' in time; restarted"):
                session.get_variable("h")
            told = session.execute("pass").error
            assert "Cause: the sandbox container did not answer a 'get' request in time" in told
        finally:
            session.shutdown()

    def test_large_values_travel_as_files_of_the_input_mount(self, sandbox):
        small = {"a": [1, 2.5, None, True], "é": "ü"}
        sandbox.set_variable("small", small)  # through the channel
        sandbox.set_variable("docs", [f"document {i} " * 20 for i in range(10_000)])  # ≈ 2.7 MB of JSON: a file
        odd = "\ud800 lone surrogate " + "x" * 1_100_000  # cannot be UTF-8: a JSON file
        sandbox.set_variable("odd", odd)
        assert sorted(p.suffix for p in sandbox.input_dir.iterdir()) == [".json", ".json"]
        assert sandbox.get_variable("small") == small
        result = sandbox.execute("print(len(docs), docs[9999][:13], len(odd), odd[0] == '\\ud800')")
        assert result.stdout == f"10000 document 9999 {len(odd)} True\n"
        sandbox.set_variable("docs", ["now small"])  # the file of the old value is removed
        assert [p.suffix for p in sandbox.input_dir.iterdir()] == [".json"]
