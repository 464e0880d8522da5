"""The adk-rlm framework's contract with the code in the Docker sandbox (a security boundary). Slow: it needs a
Docker engine (started by the docker plugin's test fixtures when this machine can)."""

import sys
from pathlib import Path

import pytest

import test_adk_rlm_runs as base
from rlm_host.testing import in_sandbox

sys.path.append(str(Path(__file__).resolve().parents[2] / "rlm-sandbox-docker" / "tests"))
from docker_fixtures import docker_engine  # noqa: E402,F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_engine")]

TestInDocker = in_sandbox(base.TestAdkRlm, "docker", "rlm-sandbox-docker")
