"""``rlm plugins doctor`` and a missing image: one line naming the image, its sandbox or environment, the command
that builds it and ``build_missing``; an engine that does not answer stays the ``docker-engine`` line."""

from __future__ import annotations

import json

import pytest

from docker_fixtures import docker_engine  # noqa: F401 (fixtures)

PLUGIN = "rlm-sandbox-docker"

ENV_HOOKS = '''
from rlm_host import EnvironmentSpec, hookimpl


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec("pkgs_env", "needs a package in its sandbox", "rlm_provision_env:Nothing",
                            sandbox_packages=("rlm-never-built-probe==0.0",))]
'''


@pytest.mark.slow
def test_the_doctor_names_the_missing_image_its_environment_and_the_command(docker_engine, rlm_cli, rlm_isolated,
                                                                            tmp_path, monkeypatch):
    from rlm_sandbox_docker.engine import derived_tag

    (tmp_path / "rlm_provision_env.py").write_text(ENV_HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "rlm_provision_env")
    tag = derived_tag(["rlm-never-built-probe==0.0"])
    config = rlm_isolated.work / "c.toml"

    def doctor(text: str) -> tuple[dict, str, int]:
        config.write_text('[run]\nsandbox = "docker"\nenvironment = "pkgs_env"\n' + text)
        rows = {r["name"]: r for r in json.loads(rlm_cli("--config", "c.toml", "plugins", "doctor", "--json",
                                                         plugins=PLUGIN).out)["checks"]}
        shown = rlm_cli("--config", "c.toml", "plugins", "doctor", plugins=PLUGIN)
        return rows, shown.out, shown.code

    rows, out, code = doctor("")
    image = rows["docker-image"]
    assert not image["ok"] and image["required"] and code == 1
    line = (f"image {tag} (with rlm-never-built-probe==0.0) for the pkgs_env environment's docker sandbox is "
            "missing: run `rlm sandbox build-image --with rlm-never-built-probe==0.0`")
    assert image["detail"].startswith(line)
    assert image["hint"] == 'or set [sandbox.docker] build_missing = "always" to build it when a run needs it'
    assert [text for text in out.splitlines() if tag in text] == [f"FAIL check        docker-image         {line} "
                                                                  f"(a run on a terminal offers to build it)  "
                                                                  f"({PLUGIN})"]
    assert rows["docker"]["ok"] and rows["docker-engine"]["ok"]
    rows, out, code = doctor('[sandbox.docker]\nbuild_missing = "always"\n')
    assert rows["docker-image"]["ok"] and code == 0
    assert rows["docker-image"]["detail"].endswith('is missing: built when a run needs it (build_missing = "always")')
    # the configured base image missing: one line, the sandbox's, with the command
    rows, out, code = doctor('[sandbox.docker]\nimage = "rlm-sandbox:test-nothing"\nbuild_missing = "never"\n')
    assert [text for text in out.splitlines() if "rlm-sandbox:test-nothing" in text] == [
        "FAIL sandbox      docker               image rlm-sandbox:test-nothing (the docker sandbox's image) is "
        f"missing: run `rlm sandbox build-image --tag rlm-sandbox:test-nothing`  ({PLUGIN})"]
    assert rows["docker-image"]["ok"]  # said once, by the sandbox's row


def test_the_doctor_leaves_an_engine_that_is_down_to_its_own_line(tmp_path, monkeypatch, rlm_cli):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    rows = {r["name"]: r for r in json.loads(rlm_cli("plugins", "doctor", "--json", plugins=PLUGIN).out)["checks"]}
    assert not rows["docker-engine"]["ok"] and "cannot reach the Docker engine" in rows["docker-engine"]["detail"]
    assert rows["docker-image"]["ok"] and rows["docker-image"]["detail"].startswith("not checked: the Docker engine")
