"""Fixtures of the Docker sandbox tests (imported by the slow test modules; a conftest.py would shadow the
host's tests' ``import conftest``). The engine itself comes from ``rlm_sandbox_docker.testing``.
"""

from __future__ import annotations

import pytest

from rlm_host.sandbox.protocol import SandboxLimits
from rlm_sandbox_docker.testing import docker_engine  # noqa: F401 (fixture)


@pytest.fixture
def docker_client(docker_engine):
    from rlm_sandbox_docker.engine import connect

    return connect()


@pytest.fixture
def limits():
    return SandboxLimits(exec_timeout=5, memory_mb=1024, max_output_chars=1000)


@pytest.fixture
def sandbox(docker_engine, limits):
    """A started session with a short default timeout; shut down after the test."""
    from rlm_sandbox_docker.runtime import DockerSandbox

    session = DockerSandbox(limits=limits)
    session.start()
    yield session
    session.shutdown()


@pytest.fixture
def containers_of(docker_client):
    """containers_of(session): every container (running or not) of one sandbox session."""

    def find(session) -> list:
        return docker_client.containers.list(all=True, filters={"label": f"rlm.session={session.session_id}"})

    return find
