"""A missing sandbox image built when a run needs it (``[sandbox.docker] build_missing``), in this process.

Fast tests need no engine (the setting, which images can be built, the question, the lock, the progress lines,
the spinner paused, a cloned project's setting ignored). The slow ones use the real engine; a base build is
replaced at the seam (``rlm_sandbox_docker.image.build_image``) by a retag of the suite's image — real tags in
the real engine, no debootstrap — and one real ``--with`` build (pip + import, ≈ 4 s) runs end to end. Other
processes and a terminal: ``test_docker_provision_terminal.py``; the doctor: ``test_docker_image_doctor.py``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest

from rlm_host import SandboxServices
from rlm_host.sdk.embedding import load_settings

from docker_fixtures import docker_client, docker_engine, missing_tag, private_cache, sandbox_tags  # noqa: F401

pytestmark = pytest.mark.usefixtures("private_cache")

PLUGIN = "rlm-sandbox-docker"
REQUIRED = os.environ.get("RLM_REQUIRE_DOCKER") == "1"


def settings(**values):
    from rlm_sandbox_docker.settings import DockerSettings

    return DockerSettings(**values)


# ------------------------------------------------------------------------------------------- no engine needed


def test_the_setting_defaults_to_ask_and_takes_an_environment_variable(tmp_path, rlm_plugin_host):
    assert settings().build_missing == "ask"
    with pytest.raises(ValueError):
        settings(build_missing="sometimes")
    host = rlm_plugin_host(PLUGIN)
    loaded = load_settings(environ={"HOME": str(tmp_path), "RLM_SANDBOX__DOCKER__BUILD_MISSING": "always"},
                           cwd=tmp_path, host=host)
    assert loaded.component("sandbox", "docker").build_missing == "always"


def test_a_cloned_project_cannot_make_runs_build_images(tmp_path, rlm_plugin_host):
    """``build_missing = "always"`` in an untrusted rlm.toml is ignored (a multi-minute, network-using build the
    user did not ask for); trusted, it applies."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "rlm.toml").write_text('[sandbox.docker]\nbuild_missing = "always"\n')
    host = rlm_plugin_host(PLUGIN)
    loaded = load_settings(environ={"HOME": str(tmp_path)}, cwd=project, host=host)
    assert loaded.component("sandbox", "docker").build_missing == "ask"
    assert [item.key for item in loaded.ignored] == ["sandbox.docker.build_missing"]
    trusted = load_settings(environ={"HOME": str(tmp_path)}, cwd=project, host=host, trust=True)
    assert trusted.component("sandbox", "docker").build_missing == "always"


def test_which_images_a_build_can_make():
    from rlm_sandbox_docker.provision import buildable

    assert buildable("rlm-sandbox:py3") and buildable("rlm-sandbox:mine") and buildable("rlm-sandbox")
    assert not buildable("python:3.12-slim") and not buildable("registry:5000/rlm-sandbox:py3")
    assert not buildable("rlm-sandbox:py-0123456789")  # a derived tag named without its packages
    assert buildable("rlm-sandbox:py-0123456789", ("pytest",))


def test_a_session_builds_only_what_the_policy_a_person_and_this_process_allow(monkeypatch):
    from rlm_sandbox_docker import build_view, provision

    monkeypatch.setattr(provision, "base_problem", lambda: "")
    monkeypatch.setattr(build_view, "attended", lambda: False)
    assert provision.on_demand(settings(build_missing="always"))
    assert not provision.on_demand(settings(build_missing="ask")) and not provision.on_demand(settings())
    assert not provision.on_demand(settings(build_missing="never"))
    assert not provision.on_demand(settings(build_missing="always", image="python:3.12-slim"))
    monkeypatch.setattr(build_view, "attended", lambda: True)
    assert provision.on_demand(settings(build_missing="ask"))
    monkeypatch.setattr(provision, "base_problem", lambda: "building the base image needs root")
    assert not provision.on_demand(settings(build_missing="always"))


def test_a_base_image_needs_root(monkeypatch):
    from rlm_sandbox_docker import provision

    monkeypatch.setattr(provision.os, "geteuid", lambda: 1000)
    assert provision.base_problem() == ("building the base image needs root (debootstrap): run `sudo rlm sandbox "
                                        "build-image`")


def test_the_question_names_the_image_its_packages_and_the_time():
    from rlm_sandbox_docker.provision import question

    assert question("rlm-sandbox:py3", (), False) == (
        "The Docker sandbox image rlm-sandbox:py3 is missing. Build it now (about 1 minute)?")
    assert question("rlm-sandbox:py-aa", ("pytest", "dspy"), True) == (
        "The Docker sandbox image rlm-sandbox:py-aa (with dspy, pytest) is missing. Build it now, after its base "
        "rlm-sandbox:py3 (about 2 minutes)?")


def test_nobody_is_asked_outside_the_main_thread_or_a_terminal():
    from rlm_sandbox_docker import build_view

    assert build_view.attended() is False  # pytest: stdin is not a terminal
    seen = []
    thread = threading.Thread(target=lambda: seen.append(build_view.attended()))
    thread.start()
    thread.join()
    assert seen == [False]


def test_the_lock_folder_is_private_and_a_foreign_one_is_refused(tmp_path, monkeypatch):
    from rlm_sandbox_docker.engine import DockerSandboxError
    from rlm_sandbox_docker.provision import image_lock, lock_folder

    folder = lock_folder()
    assert folder == tmp_path / "cache" / "rlm" / "docker-image-locks"
    assert folder.stat().st_mode & 0o777 == 0o700
    with image_lock("unix:///x.sock", "rlm-sandbox:py3"):
        (lock,) = folder.iterdir()
        assert lock.name.startswith("rlm-sandbox_py3-") and lock.stat().st_mode & 0o777 == 0o600
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "linked"))
    (tmp_path / "linked" / "rlm").mkdir(parents=True)
    (tmp_path / "linked" / "rlm" / "docker-image-locks").symlink_to(elsewhere)
    with pytest.raises(DockerSandboxError, match="is not a folder of yours"):
        lock_folder()


def test_the_lock_lets_one_thread_build_at_a_time(capsys):
    from rlm_sandbox_docker.provision import image_lock

    inside, overlaps = [], []

    def build() -> None:
        with image_lock("unix:///x.sock", "rlm-sandbox:py3"):
            overlaps.append(len(inside))
            inside.append(1)
            time.sleep(0.3)
            inside.pop()

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [0, 0]
    assert "waiting for the build of rlm-sandbox:py3 under way in another rlm session" in capsys.readouterr().err


def test_the_progress_lines_name_each_phase_and_the_time(capsys):
    from rlm_sandbox_docker.build_view import BuildView

    view = BuildView("rlm-sandbox:py3", 4, live=False)
    for name in ("debootstrap", "trimming"):
        view.phase(name)
    view.failed("was interrupted")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "building the Docker sandbox image rlm-sandbox:py3…"
    assert lines[1] == "  debootstrap (1/4) · 0:00 elapsed" and lines[2] == "  trimming (2/4) · 0:00 elapsed"
    assert lines[3].startswith("✗ building rlm-sandbox:py3 was interrupted during trimming, after 0.")


def test_the_run_spinner_is_paused_while_asking_and_building():
    """``rlm run``'s spinner is a rich Live redirecting stderr: stopped for the question and the build (stderr is
    the terminal again), started again after."""
    import io

    from rich.console import Console
    from rich.live import Live

    from rlm_sandbox_docker import build_view

    live = Live("⠋ step 1", console=Console(file=io.StringIO(), force_terminal=True), redirect_stderr=True,
                auto_refresh=False, transient=True)
    live.start()
    try:
        proxy = sys.stderr
        assert type(proxy).__name__ == "FileProxy"
        with build_view.paused_live_view():
            assert not live.is_started and sys.stderr is not proxy
        assert live.is_started and type(sys.stderr).__name__ == "FileProxy"
    finally:
        live.stop()


# ------------------------------------------------------------------------------------------- the real engine


class FakeBuilds:
    """``image.build_image`` replaced by a retag of the suite's base image: the phases, then the tag in the real
    engine (or ``fail``: an exception raised after the temporary tag was made)."""

    def __init__(self, client, delay: float = 0.05) -> None:
        self.client, self.delay = client, delay
        self.calls: list[str] = []
        self.fail: BaseException | None = None

    def __call__(self, tag, *, base_url=None, log=print, phase=None, **options):
        from rlm_sandbox_docker import DEFAULT_IMAGE
        from rlm_sandbox_docker.image import BASE_PHASES

        self.calls.append(tag)
        for name in BASE_PHASES:
            phase(name)
            time.sleep(self.delay)
        repository, _, version = tag.rpartition(":")
        self.client.images.get(DEFAULT_IMAGE).tag(repository, version)
        if self.fail is not None:
            raise self.fail
        return {"tag": tag, "built": True, "seconds": 0.1, "size_mb": 117}


@pytest.fixture
def fake_builds(docker_client, monkeypatch):
    from rlm_sandbox_docker import image

    fake = FakeBuilds(docker_client)
    monkeypatch.setattr(image, "build_image", fake)
    return fake


@pytest.mark.slow
def test_never_keeps_the_error_and_its_exit_code(missing_tag, fake_builds, rlm_cli, rlm_script, rlm_isolated,
                                                 monkeypatch):
    """A run needing a missing image is refused before any model call, with the command (exit 2); so is one
    with ``ask`` where nobody can answer. Nothing is built."""
    from rlm_sandbox_docker import build_view

    monkeypatch.setattr(build_view, "attended", lambda: False)  # as without a terminal (even under pytest -s)
    model = rlm_script(["FINAL(1)"])
    for policy in ("never", "ask"):
        (rlm_isolated.work / "c.toml").write_text(f'[sandbox.docker]\nimage = "{missing_tag}"\n'
                                                  f'build_missing = "{policy}"\n')
        done = rlm_cli("--config", "c.toml", "run", "q", "--model", model, "--sandbox", "docker", plugins=PLUGIN)
        assert done.code == 2, done.err
        assert (f"error: the docker sandbox is not ready: image {missing_tag} (the docker sandbox's image) is "
                f"missing: run `rlm sandbox build-image --tag {missing_tag}`") in done.err
        assert 'hint: or set [sandbox.docker] build_missing = "always"' in done.err
    assert fake_builds.calls == []


@pytest.mark.slow
def test_always_builds_with_progress_and_the_run_goes_on(missing_tag, fake_builds, docker_client, rlm_cli,
                                                         rlm_script, rlm_isolated):
    (rlm_isolated.work / "c.toml").write_text(f'[sandbox.docker]\nimage = "{missing_tag}"\n'
                                              'build_missing = "always"\n')
    model = rlm_script(["```repl\nprint(6 * 7)\n```", "FINAL(42)"])
    done = rlm_cli("--config", "c.toml", "run", "q", "--model", model, "--sandbox", "docker", plugins=PLUGIN)
    assert done.code == 0, done.err
    assert done.out.strip().splitlines()[0] == "42"
    assert f"building the Docker sandbox image {missing_tag}…\n  debootstrap (1/4) · 0:00 elapsed\n" in done.err
    assert "  importing (4/4) · " in done.err and f"✓ built {missing_tag} in " in done.err
    assert len(fake_builds.calls) == 1 and fake_builds.calls[0].startswith("rlm-sandbox:building-")
    assert missing_tag in sandbox_tags(docker_client)
    assert not any(t.startswith("rlm-sandbox:building-") for t in sandbox_tags(docker_client))  # the temporary tag


@pytest.mark.slow
def test_two_sessions_build_the_image_once(missing_tag, fake_builds, capsys):
    from rlm_sandbox_docker.runtime import DockerSandbox

    fake_builds.delay = 0.4  # the second session finds the lock taken
    outputs, errors = [], []

    def run() -> None:
        session = DockerSandbox(settings(image=missing_tag, build_missing="always"))
        try:
            outputs.append(session.execute("print(6 * 7)").stdout)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            session.shutdown()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and outputs == ["42\n", "42\n"]
    assert len(fake_builds.calls) == 1
    assert f"waiting for the build of {missing_tag} under way in another rlm session" in capsys.readouterr().err


@pytest.mark.slow
def test_ask_is_asked_once_and_no_keeps_the_error(missing_tag, fake_builds, monkeypatch):
    from rlm_sandbox_docker import build_view
    from rlm_sandbox_docker.engine import DockerSandboxError
    from rlm_sandbox_docker.runtime import DockerSandbox

    asked: list[str] = []
    monkeypatch.setattr(build_view, "attended", lambda: True)
    monkeypatch.setattr(build_view, "ask", lambda question: asked.append(question) or False)
    for _ in range(2):
        session = DockerSandbox(settings(image=missing_tag))
        with pytest.raises(DockerSandboxError, match=rf"image {missing_tag} not found: run `rlm sandbox "
                                                     rf"build-image --tag {missing_tag}`"):
            session.start()
        session.shutdown()
    assert asked == [f"The Docker sandbox image {missing_tag} is missing. Build it now (about 1 minute)?"]
    assert fake_builds.calls == []


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["interrupted", "failed"])
def test_a_failed_or_interrupted_build_leaves_no_tag(missing_tag, fake_builds, docker_client, failure):
    from rlm_sandbox_docker.engine import DockerSandboxError
    from rlm_sandbox_docker.runtime import DockerSandbox

    fake_builds.fail = (KeyboardInterrupt() if failure == "interrupted"
                        else DockerSandboxError("debootstrap failed (exit code 1):\nE: no network"))
    session = DockerSandbox(settings(image=missing_tag, build_missing="always"))
    with pytest.raises(DockerSandboxError) as raised:
        session.start()
    session.shutdown()
    how = f"run `rlm sandbox build-image --tag {missing_tag}`"
    expected = {"interrupted": f"building the sandbox image {missing_tag} was interrupted: {how}",
                "failed": f"building the sandbox image {missing_tag} failed: debootstrap failed (exit code 1):\n"
                          f"E: no network\n{how}"}[failure]
    assert str(raised.value) == expected
    assert not {missing_tag, *fake_builds.calls} & sandbox_tags(docker_client)


@pytest.mark.slow
def test_a_missing_with_image_is_really_built_when_always(docker_engine, docker_client, tmp_path):
    """The real ``--with`` build (pip on the host, a container compiling, an import) of a one-wheel package."""
    from rlm_sandbox_docker.engine import DockerSandboxError, derived_tag
    from rlm_sandbox_docker.runtime import create

    tag = derived_tag(["iniconfig"])
    if tag in sandbox_tags(docker_client):
        docker_client.images.remove(tag)
    session = create({"build_missing": "always"}, SandboxServices(packages=("iniconfig",)))
    try:
        started = time.monotonic()
        try:
            ran = session.execute("import iniconfig\nprint(iniconfig.__name__)")
        except DockerSandboxError as exc:
            if "pip could not install" in str(exc) and not REQUIRED:
                pytest.skip(f"no package index reachable: {exc}")
            raise
        assert ran.error is None and ran.stdout == "iniconfig\n"
        assert time.monotonic() - started < 60
        labels = docker_client.images.get(tag).labels
        assert json.loads(labels["org.rlm.sandbox-packages"]) == ["iniconfig"]
    finally:
        session.shutdown()
        if tag in sandbox_tags(docker_client):
            docker_client.images.remove(tag)
