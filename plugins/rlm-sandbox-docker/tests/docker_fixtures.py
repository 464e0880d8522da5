"""The sessions the docker runtime's own slow tests need (a plain module the test modules import by name: this
folder is on pytest's ``pythonpath``, see the root pyproject.toml).

The engine itself — found or started once per test session, the sandbox image built once, shared with the
host's suites and other plugins' tests — is this plugin's ``rlm_sandbox_docker.testing.docker_engine``
(``prepare_engine``, ``release_engine``, ``prepare_image``), re-exported here for this folder's test modules.
"""

from __future__ import annotations

import uuid

import pytest

from rlm_host.sdk.sandbox import SandboxLimits
from rlm_sandbox_docker.testing import docker_engine, prepare_engine, prepare_image, release_engine

__all__ = ["containers_of", "docker_client", "docker_engine", "limits", "missing_tag", "prepare_engine",
           "prepare_image", "private_cache", "release_engine", "sandbox", "sandbox_tags"]


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


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """Image-build locks in this test's own cache folder, and no answer remembered from another test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from rlm_sandbox_docker import provision

    monkeypatch.setattr(provision, "_declined", set())


def sandbox_tags(client) -> set[str]:
    """Every tag of the rlm-sandbox repository in the engine."""
    return {name for image in client.images.list("rlm-sandbox") for name in image.tags}


@pytest.fixture
def missing_tag(docker_engine, docker_client):
    """A tag of the rlm-sandbox repository that does not exist; removed after the test, with any temporary tag
    an on-demand build left."""
    tag = f"rlm-sandbox:test-{uuid.uuid4().hex[:8]}"
    yield tag
    for name in sandbox_tags(docker_client):
        if name == tag or name.startswith("rlm-sandbox:building-"):
            docker_client.images.remove(name)
