"""``rlm harness run --sandbox docker|auto`` when the image with pytest (the harness's sandbox packages) is missing:
built before the run starts, through the docker sandbox's own ``build_missing`` (progress on stderr), then used;
when it cannot be built — nobody to ask, a build that fails, no engine — the run stops before it starts: one
message naming the fix, exit 2, no trajectory. Through the real CLI against the real engine (slow, skipped
without Docker; a failure with RLM_REQUIRE_DOCKER=1). Each test names an image of its own (a package set nobody
else uses) and removes only that image."""

from __future__ import annotations

import json
import uuid

import pytest

from harness_support import call, final
from rlm_harness import SANDBOX_PACKAGES

from rlm_sandbox_docker.testing import docker_engine  # noqa: F401 (fixture)

PLUGINS = "rlm-harness,rlm-sandbox-docker"


@pytest.fixture
def own_image(docker_engine):
    """(requirement, tag): a requirement pytest satisfies but no one else's package set holds, and the tag of the
    harness's image with it (``[environment.harness] sandbox_packages``), removed before and after the test."""
    from rlm_sandbox_docker.engine import connect, derived_tag

    requirement = f"pytest>=0.0.{uuid.uuid4().int % 10**9}"
    tag = derived_tag([*SANDBOX_PACKAGES, requirement])
    client = connect(cached=False)
    _remove(client, tag)
    yield requirement, tag
    _remove(client, tag)
    client.close()


def _remove(client, tag):
    import docker.errors

    try:
        client.images.remove(tag, force=True)
    except docker.errors.ImageNotFound:
        pass


def _exists(tag):
    from rlm_sandbox_docker.engine import connect
    from rlm_sandbox_docker.image import image_exists

    client = connect(cached=False)
    try:
        return image_exists(client, tag)
    finally:
        client.close()


def _project(rlm_isolated, *packages):
    """A project whose one test passes, and a settings file adding ``packages`` to the harness's sandbox."""
    project = rlm_isolated.work / "shop"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    config = rlm_isolated.work / "settings.toml"
    config.write_text(f"[environment.harness]\nsandbox_packages = {json.dumps(list(packages))}\n")
    return project, config


def _harness(rlm_cli, rlm_script, config, project, sandbox, replies):
    model = rlm_script(replies)
    return rlm_cli("--config", str(config), "harness", "run", "Make the tests pass.", "--workdir", str(project),
                   "--sandbox", sandbox, "--model", model, "--max-steps", str(len(replies)), "--json",
                   plugins=PLUGINS)


def _no_run(rlm_isolated, result):
    """Nothing of a run: no run line, no trajectory."""
    runs = rlm_isolated.runs / "runs"
    assert "▶ run " not in result.err
    assert not runs.exists() or not list(runs.glob("*.jsonl")), "the run must not start"


@pytest.mark.slow
def test_a_missing_image_is_built_before_the_run_and_used_by_auto_and_docker(rlm_cli, rlm_script, rlm_isolated,
                                                                             own_image, monkeypatch):
    requirement, tag = own_image
    project, config = _project(rlm_isolated, requirement)
    monkeypatch.setenv("RLM_SANDBOX__DOCKER__BUILD_MISSING", "always")  # as CI sets it; on a terminal: asked
    replies = [call("run_tests"), final("the tests pass")]

    first = _harness(rlm_cli, rlm_script, config, project, "auto", replies)
    assert first.code == 0, first.err
    run = json.loads(first.out)
    assert run["sandbox"] == "docker" and run["completed"], first.err
    assert f"building the Docker sandbox image {tag}…" in first.err and f"✓ built {tag}" in first.err
    assert first.err.index(f"✓ built {tag}") < first.err.index("▶ run "), "built before the run starts"
    steps = [json.loads(line)["data"] for line in open(run["trajectory_path"])
             if json.loads(line)["type"] == "step"]
    assert steps[0]["observation"]["passed"] and "1 passed" in steps[0]["observation"]["stdout"]
    assert _exists(tag)

    again = _harness(rlm_cli, rlm_script, config, project, "docker", replies)  # present now: nothing to build
    assert again.code == 0 and json.loads(again.out)["completed"], again.err
    assert "building the Docker sandbox image" not in again.err


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["docker", "auto"])
def test_a_missing_image_nobody_can_be_asked_about_is_exit_2_before_the_run(rlm_cli, rlm_script, rlm_isolated,
                                                                           own_image, sandbox):
    requirement, tag = own_image
    project, config = _project(rlm_isolated, requirement)
    result = _harness(rlm_cli, rlm_script, config, project, sandbox, [final()])  # build_missing "ask", no terminal
    assert result.code == 2, result.err
    packages = sorted([*SANDBOX_PACKAGES, requirement])
    assert f"image {tag} (the sandbox image with {', '.join(packages)}) not found" in result.err
    assert "rlm sandbox build-image --with pytest --with " in result.err
    assert 'build_missing = "always"' in result.err
    if sandbox == "auto":  # no boundary can serve the harness: the unsafe runtime is offered, named for what it is
        assert "pass --sandbox process (NOT a security boundary)" in result.err
    _no_run(rlm_isolated, result)
    assert not _exists(tag)


@pytest.mark.slow
def test_an_image_whose_build_fails_is_exit_2_before_the_run(rlm_cli, rlm_script, rlm_isolated, docker_engine,
                                                             monkeypatch):
    from rlm_sandbox_docker.engine import derived_tag

    missing = f"rlm-no-such-distribution-{uuid.uuid4().hex[:8]}"  # pip finds no such thing (or no index at all)
    tag = derived_tag([*SANDBOX_PACKAGES, missing])
    project, config = _project(rlm_isolated, missing)
    monkeypatch.setenv("RLM_SANDBOX__DOCKER__BUILD_MISSING", "always")
    result = _harness(rlm_cli, rlm_script, config, project, "docker", [final()])
    assert result.code == 2, result.err
    assert f"✗ building {tag} failed" in result.err
    assert f"the docker sandbox is not ready: building the sandbox image {tag} failed: pip could not install" \
        in result.err
    assert "Traceback" not in result.err
    _no_run(rlm_isolated, result)
    assert not _exists(tag), "nothing half built is left"


@pytest.mark.parametrize("sandbox", ["docker", "auto"])
def test_no_engine_is_exit_2_before_the_run(rlm_cli, rlm_script, rlm_isolated, monkeypatch, sandbox):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent")
    project, config = _project(rlm_isolated)
    result = _harness(rlm_cli, rlm_script, config, project, sandbox, [final()])
    assert result.code == 2, result.err
    assert "cannot reach the Docker engine at unix:///nonexistent" in result.err
    _no_run(rlm_isolated, result)
