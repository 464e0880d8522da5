"""The adapter's contract again with the code in the Docker sandbox (a security boundary): the framework's code
runs in a hardened container, `context` and `llm_query` there. Slow: it needs a Docker engine (started by the
docker plugin's test fixtures when this machine can)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import test_pydantic_ai_runs as base
from rlm_host.testing import FrameworkContract

DOCKER_TESTS = Path(__file__).resolve().parents[2] / "rlm-sandbox-docker" / "tests"
if str(DOCKER_TESTS) not in sys.path:
    sys.path.append(str(DOCKER_TESTS))

from docker_fixtures import docker_engine  # noqa: E402,F401 (a fixture)

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _engine(docker_engine):
    return docker_engine


class TestPydanticAIInDocker(FrameworkContract):
    framework = base.TestPydanticAIAdapter.framework
    distribution = base.TestPydanticAIAdapter.distribution + ",rlm-sandbox-docker"
    heavy_modules = base.TestPydanticAIAdapter.heavy_modules
    finishing_replies = base.TestPydanticAIAdapter.finishing_replies
    final_answer = base.TestPydanticAIAdapter.final_answer
    sub_rules = base.TestPydanticAIAdapter.sub_rules
    working_reply = base.TestPydanticAIAdapter.working_reply
    sandbox = "docker"
