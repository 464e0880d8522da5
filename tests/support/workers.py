"""Sandbox runtimes for tests that run the engine in each: the ``engine`` fixture (the runtime's name, with a
Docker engine prepared and released around a docker test), ``docker_engine`` (the engine, for a docker test in a
module of other tests), and killing a session's worker from outside, as the OOM killer, a user or an engine
restart would."""

from __future__ import annotations

import os
import signal
import time
from typing import Any, Iterator

import pytest

#: ``RLM_PLUGINS`` for a run in each runtime.
PLUGINS = {"process": "", "monty": "rlm-sandbox-monty", "docker": "rlm-sandbox-docker"}
#: Parametrize ``engine`` (indirect) with these: Docker's case is slow.
RUNTIMES = ["process", "monty", pytest.param("docker", marks=pytest.mark.slow)]


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """The runtime named by the parameter, its plugin importable; Docker's engine ready for the test."""
    sandbox = request.param
    if sandbox != "process":
        pytest.importorskip(f"rlm_sandbox_{sandbox}")
    if sandbox != "docker":
        yield sandbox
        return
    from rlm_sandbox_docker.testing import prepare_engine, release_engine

    prepare_engine()
    try:
        yield sandbox
    finally:
        release_engine()


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[str]:
    """rlm-sandbox-docker's engine (``rlm_sandbox_docker.testing``) for a host test module that also has tests
    needing no Docker: its DOCKER_HOST, the test skipped when that plugin is not installed."""
    testing = pytest.importorskip("rlm_sandbox_docker.testing")
    yield testing.prepare_engine()
    testing.release_engine()


def kill_worker(session: Any) -> None:
    """SIGKILL the worker process (process, Monty) or kill the container (Docker), then let the kill land."""
    container = getattr(session, "container", None)
    if container is not None:
        container.kill()
    else:
        os.kill(session.pid, signal.SIGKILL)
    time.sleep(0.2)
