"""The sessions the docker runtime's own slow tests need (a plain module the test modules import: a conftest.py
here would shadow the ``import conftest`` of the host's tests in a run of the whole repository).

The engine itself — found or started once per test session, the sandbox image built once, shared with the
host's suites and other plugins' tests — is ``rlm_host.testing``'s ``docker_engine`` (``prepare_engine``,
``release_engine``, ``prepare_image``), re-exported here for this folder's test modules.
"""

from __future__ import annotations

import pytest

from rlm_host.sdk.sandbox import SandboxLimits
from rlm_host.testing import docker_engine, prepare_engine, prepare_image, release_engine

__all__ = ["containers_of", "docker_client", "docker_engine", "limits", "prepare_engine", "prepare_image",
           "release_engine", "sandbox"]  # fmt: skip


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
