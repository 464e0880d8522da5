"""The Docker engine that tests of the docker sandbox runtime need, shared by every suite of one test session:
this plugin's own tests, the host's suites (``tests/security``, ``tests/faults``…) and other plugins' tests that
run something in the docker sandbox. Needs pytest; nothing else in the plugin imports this module.

``prepare_engine()`` finds or starts an engine once per test session and makes sure the sandbox image is
there: an engine that already answers (DOCKER_HOST or the default socket) is used; else, as root, the rlm
repository's ``scripts/docker-engine.sh`` (found above this file or the working folder in a checkout;
``RLM_DOCKER_ENGINE_SCRIPT`` points elsewhere) starts one — it installs docker.io and debootstrap if missing and
runs dockerd under /tmp with no bridge and no iptables rules — and ``release_engine()`` stops it at the end, only
if this session started it. The image is built once per machine (``rlm sandbox build-image``: a few minutes),
then found in the engine's image store. Where no engine can run (not root and none reachable), the tests that
need one are skipped with the reason; with RLM_REQUIRE_DOCKER=1 (CI) that is a failure instead. The state lives
in this module, so every suite of the session shares one engine and builds the image once.

``prepare_image(packages)`` (after, or instead of, ``prepare_engine()``) makes sure the image that sessions
given ``SandboxServices(packages=…)`` use is there — ``rlm sandbox build-image --with …``, once per machine
(pip on the host + an import: seconds for pytest, ≈ 30 s for dspy) — and returns its tag. A build that fails
(no package index reachable) skips the tests that need it, with the reason (a failure with
RLM_REQUIRE_DOCKER=1), and is not tried again in the same test session.

``docker_engine``: a session fixture, its DOCKER_HOST; a test module that needs the engine imports it::

    from rlm_sandbox_docker.testing import docker_engine  # noqa: F401 (a fixture)

The docker SDK and the runtime's modules are imported only inside these functions.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path("scripts") / "docker-engine.sh"


def _engine_script() -> Path:
    """``RLM_DOCKER_ENGINE_SCRIPT``, else the rlm checkout's ``scripts/docker-engine.sh`` above this file (an
    editable install) or above the working folder; else where it would be in the working folder (missing)."""
    if os.environ.get("RLM_DOCKER_ENGINE_SCRIPT"):
        return Path(os.environ["RLM_DOCKER_ENGINE_SCRIPT"])
    for start in (Path(__file__).resolve().parent, Path.cwd()):
        for folder in (start, *start.parents):
            if (folder / SCRIPT).is_file():
                return folder / SCRIPT
    return Path.cwd() / SCRIPT


ENGINE_SCRIPT = _engine_script()
REQUIRED = os.environ.get("RLM_REQUIRE_DOCKER") == "1"

_engine: dict = {}  # the engine found or started for this test session (shared by every test module)


def _unavailable(reason: str) -> None:
    _engine["unavailable"] = reason  # later callers skip at once
    if REQUIRED:
        pytest.fail(f"RLM_REQUIRE_DOCKER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def _engine_answers() -> bool:
    from rlm_sandbox_docker.engine import DockerSandboxError, connect

    try:
        connect(cached=False, timeout=10).close()
        return True
    except DockerSandboxError:
        return False


def prepare_engine() -> str:
    """Find or start an engine and make sure the image is there, once per test session; its DOCKER_HOST."""
    if "host" in _engine:
        return _engine["host"]
    if "unavailable" in _engine:
        _unavailable(_engine["unavailable"])
    from rlm_sandbox_docker import DEFAULT_IMAGE
    from rlm_sandbox_docker.engine import connect, engine_address
    from rlm_sandbox_docker.image import build_image, image_exists

    _engine["saved"] = os.environ.get("DOCKER_HOST")
    if not _engine_answers():
        if not ENGINE_SCRIPT.is_file():
            _unavailable(f"no Docker engine answers at {engine_address()} and {ENGINE_SCRIPT} is missing")
        if os.geteuid() != 0:
            _unavailable(f"no Docker engine answers at {engine_address()} and this is not root, so none can be "
                         f"started: start one, or run `{ENGINE_SCRIPT}` as root")
        ran_before = subprocess.run(["bash", str(ENGINE_SCRIPT), "status"], capture_output=True).returncode == 0
        out = subprocess.run(["bash", str(ENGINE_SCRIPT)], capture_output=True, text=True, timeout=900)
        if out.returncode != 0 or "DOCKER_HOST=" not in out.stdout:
            _unavailable(f"{ENGINE_SCRIPT} could not start a Docker engine:\n{out.stderr[-2000:]}")
        os.environ["DOCKER_HOST"] = out.stdout.strip().rsplit("DOCKER_HOST=", 1)[1]
        _engine["started"] = not ran_before
    client = connect(cached=False)
    if not image_exists(client, DEFAULT_IMAGE):
        if os.geteuid() != 0:
            _unavailable(f"the image {DEFAULT_IMAGE} is missing and building it needs root: "
                         "run `sudo rlm sandbox build-image`")
        print(f"\nbuilding {DEFAULT_IMAGE} once for this machine (debootstrap: a few minutes)…", file=sys.stderr)
        try:
            build_image(DEFAULT_IMAGE, log=lambda message: print(message, file=sys.stderr))
        except Exception as exc:  # once: every later test is told at once instead of building again
            _unavailable(f"the image {DEFAULT_IMAGE} could not be built: {type(exc).__name__}: {exc}")
    client.close()
    _engine["host"] = engine_address()
    return _engine["host"]


def prepare_image(packages) -> str:
    """The tag of the image with ``packages`` (``derived_tag``), built if missing; once per test session."""
    prepare_engine()
    from rlm_sandbox_docker.engine import DockerSandboxError, connect, derived_tag, package_set
    from rlm_sandbox_docker.image import build_derived_image, image_exists

    wanted = package_set(packages)
    images = _engine.setdefault("images", {})  # package set → tag, or the reason it could not be built
    if wanted not in images:
        tag = derived_tag(wanted)
        client = connect(cached=False)
        try:
            if not image_exists(client, tag):
                print(f"\nbuilding {tag} with {', '.join(wanted)} once for this machine…", file=sys.stderr)
                build_derived_image(wanted, tag, log=lambda message: print(message, file=sys.stderr))
            images[wanted] = tag
        except DockerSandboxError as exc:
            images[wanted] = DockerSandboxError(f"cannot build the sandbox image with {', '.join(wanted)}: {exc}")
        finally:
            client.close()
    found = images[wanted]
    if isinstance(found, Exception):
        if REQUIRED:
            pytest.fail(f"RLM_REQUIRE_DOCKER=1 but {found}", pytrace=False)
        pytest.skip(str(found))
    return found


def release_engine() -> None:
    """At the end of the session: stop the daemon if this session started it; restore DOCKER_HOST."""
    if _engine.pop("started", False):
        subprocess.run(["bash", str(ENGINE_SCRIPT), "stop"], capture_output=True, timeout=60)
    if "host" in _engine:
        saved = _engine.pop("saved", None)
        if saved is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = saved
        _engine.clear()


@pytest.fixture(scope="session")
def docker_engine():
    """DOCKER_HOST of an engine holding the sandbox image (set in os.environ for the session).

    Test modules import this fixture, so pytest sees one fixture per module: the work is done once
    (``prepare_engine``), and whichever copy is torn down first, at the end of the session, releases it.
    """
    yield prepare_engine()
    release_engine()


__all__ = ["docker_engine", "prepare_engine", "prepare_image", "release_engine"]
