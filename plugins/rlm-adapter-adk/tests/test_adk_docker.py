"""The framework's contract with the code in the Docker sandbox (a security boundary). Slow: it needs a Docker engine
(started by the docker plugin's test fixtures when this machine can)."""


import pytest

import test_adk_runs as base
from rlm_host.testing import in_sandbox

from rlm_sandbox_docker.testing import docker_engine  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_engine")]

TestInDocker = in_sandbox(base.TestAdkFramework, "docker", "rlm-sandbox-docker")
