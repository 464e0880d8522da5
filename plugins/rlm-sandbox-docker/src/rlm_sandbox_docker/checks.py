"""Readiness checks of the docker sandbox: each returns a Readiness naming the fix, and never raises.

Both are called as ``check(settings)`` with the validated ``[sandbox.docker]`` section of the configuration in
use (``rlm --config …`` included); None means the defaults.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from rlm_host import Readiness

from rlm_sandbox_docker import BUILD_HINT, ENGINE_HINT

if TYPE_CHECKING:
    from rlm_sandbox_docker.settings import DockerSettings

CHECK_TIMEOUT = 5  # seconds: a readiness check must not hang the doctor


def _effective(settings: DockerSettings | None) -> DockerSettings:
    """The given settings, or the defaults (the settings module imports pydantic: only when a check runs)."""
    from rlm_sandbox_docker.settings import DockerSettings

    return settings or DockerSettings()


def engine_ready(settings: DockerSettings | None = None) -> Readiness:
    """The Docker engine answers."""
    if importlib.util.find_spec("docker") is None:
        return Readiness(False, "the docker package is not installed", "pip install docker")
    from rlm_sandbox_docker.engine import DockerSandboxError, connect, engine_address

    settings = _effective(settings)
    try:
        client = connect(settings.base_url, timeout=CHECK_TIMEOUT, cached=False)
        version = client.version().get("Version", "?")
        client.close()
    except DockerSandboxError as exc:
        action = "see the hint" if "permission denied" in exc.problem else "start the engine"
        return Readiness(False, f"{exc.problem}: {action}", exc.hint or ENGINE_HINT)
    except Exception as exc:
        return Readiness(False, f"the Docker engine at {engine_address(settings.base_url)} failed: {exc}",
                         ENGINE_HINT)
    return Readiness(True, f"Docker engine {version} at {engine_address(settings.base_url)}")


def sandbox_ready(settings: DockerSettings | None = None) -> Readiness:
    """The engine answers AND the sandbox image is present."""
    engine = engine_ready(settings)
    if not engine.ok:
        return engine
    from rlm_sandbox_docker.engine import DockerSandboxError, connect, require_image

    settings = _effective(settings)
    try:
        client = connect(settings.base_url, timeout=CHECK_TIMEOUT, cached=False)
        try:
            require_image(client, settings.image)
        finally:
            client.close()
    except DockerSandboxError as exc:
        return Readiness(False, f"{exc.problem}: run `rlm sandbox build-image`", exc.hint or BUILD_HINT)
    return Readiness(True, f"{engine.detail}; image {settings.image} present")
