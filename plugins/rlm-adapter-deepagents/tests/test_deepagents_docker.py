"""The framework's contract with the code in the Docker sandbox (a security boundary). Slow: it needs a Docker engine
(started by the docker plugin's test fixtures when this machine can)."""

import socket

import pytest

import test_deepagents_runs as base
from rlm_host.testing import in_sandbox

from rlm_sandbox_docker.testing import docker_engine  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("docker_engine")]

TestInDocker = in_sandbox(base.TestDeepAgentsFramework, "docker", "rlm-sandbox-docker")

log_file = base.log_file  # a fixture


def test_the_local_shell_backend_runs_its_commands_in_the_container(rlm_cli, rlm_script, log_file, rlm_isolated):
    (rlm_isolated.work / "rlm.toml").write_text('[framework.deepagents]\nbackend = "local_shell"\n')
    model = rlm_script([base.call("execute", command="test -f /.dockerenv && echo in-a-container; hostname"),
                        base.final(base.ANSWER)])
    result, outcome, steps, _ = base.run(rlm_cli, model, log_file, plugins=f"{base.PLUGIN},rlm-sandbox-docker",
                                         sandbox="docker")
    assert result.code == 0 and outcome["final_response"] == base.ANSWER, result.err
    output = steps[1]["observation"]["output"]
    assert output.startswith("in-a-container") and socket.gethostname() not in output
