"""Readiness checks of the docker sandbox: each returns a Readiness naming the fix, and never raises.

``engine_ready`` and ``sandbox_ready`` are called as ``check(settings)`` with the validated ``[sandbox.docker]``
section of the configuration in use (``rlm --config …`` included); ``images_ready``, a doctor check without a
section, with the whole loaded configuration (it needs the environment too). None means the defaults.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

from rlm_host import Readiness

from rlm_sandbox_docker import BUILD_HINT, ENGINE_HINT

if TYPE_CHECKING:
    from rlm_sandbox_docker.settings import DockerSettings

CHECK_TIMEOUT = 5  # seconds: a readiness check must not hang the doctor
ALWAYS = 'build_missing = "always"'


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
    """The engine answers AND the sandbox image is present, or would be built when a session needs it
    (``build_missing``: ``always``, or ``ask`` where a person can answer; the planner picks the sandbox on this)."""
    engine = engine_ready(settings)
    if not engine.ok:
        return engine
    from rlm_sandbox_docker.engine import DockerSandboxError, connect, require_image
    from rlm_sandbox_docker.provision import base_problem, buildable, on_demand

    settings = _effective(settings)
    try:
        client = connect(settings.base_url, timeout=CHECK_TIMEOUT, cached=False)
        try:
            require_image(client, settings.image)
        finally:
            client.close()
    except DockerSandboxError as exc:
        if exc.problem.endswith("not found") and on_demand(settings):
            return Readiness(True, f"{engine.detail}; image {settings.image} missing: {_when_built(settings)}")
        if not exc.problem.endswith("not found"):
            return Readiness(False, exc.problem, exc.hint or BUILD_HINT)
        how = exc.hint or BUILD_HINT
        hint = (_or_always(base_problem()) if buildable(settings.image) else
                "build_missing builds only tags of the rlm-sandbox repository: pull or build this image yourself")
        return Readiness(False, f"image {settings.image} (the docker sandbox's image) is missing: {how}", hint)
    return Readiness(True, f"{engine.detail}; image {settings.image} present")


def _or_always(problem: str = "") -> str:
    """The hint beside a missing image: that ``build_missing`` would build it, or why it cannot here."""
    if problem:
        return f"build_missing cannot build it here: {problem}"
    return f"or set [sandbox.docker] {ALWAYS} to build it when a run needs it"


def _when_built(settings: DockerSettings) -> str:
    if settings.build_missing == "always":
        return f"built when a run needs it ({ALWAYS})"
    return 'a run on this terminal offers to build it (build_missing = "ask")'


def images_ready(loaded: Any = None) -> Readiness:
    """For ``rlm plugins doctor``: the image the configured environment's docker sessions use is present; if not,
    one line naming it, the environment, the command that builds it and ``build_missing``. A missing base image
    the sandbox's own check already reports is not said twice; an engine that does not answer is said by the
    ``docker-engine`` check alone."""
    from rlm_sandbox_docker import DEFAULT_IMAGE
    from rlm_sandbox_docker.engine import build_command, connect, derived_tag
    from rlm_sandbox_docker.image import image_exists
    from rlm_sandbox_docker.provision import base_problem, buildable, on_demand

    settings, environment, packages = _configured(loaded)
    if not engine_ready(settings).ok:
        return Readiness(True, "not checked: the Docker engine does not answer (the docker-engine check says why)")
    derived = bool(packages) and settings.image == DEFAULT_IMAGE
    image = derived_tag(packages) if derived else settings.image
    used = f" (with {', '.join(packages)})" if derived else ""
    used += f" for the {environment} environment's docker sandbox" if environment else " for the docker sandbox"
    try:
        client = connect(settings.base_url, timeout=CHECK_TIMEOUT, cached=False)
        try:
            present = image_exists(client, image)
            base_present = present or not derived or image_exists(client, DEFAULT_IMAGE)
        finally:
            client.close()
    except Exception as exc:  # the engine went away, or refused the request
        return Readiness(False, f"cannot look up the image {image}: {exc}", ENGINE_HINT)
    if present:
        return Readiness(True, f"image {image} present{used}")
    if not derived and not on_demand(settings):
        return Readiness(True, f"image {image} missing: the docker sandbox's line says how to build it")
    command = build_command(packages) if derived else "rlm sandbox build-image" + (
        "" if image == DEFAULT_IMAGE else f" --tag {image}")
    base = "" if base_present else f" (and its base {DEFAULT_IMAGE})"
    problem = "" if base_present else base_problem()
    if settings.build_missing == "always" and buildable(image, packages) and not problem:
        return Readiness(True, f"image {image}{base}{used} is missing: built when a run needs it ({ALWAYS})")
    note = " (a run on a terminal offers to build it)" if settings.build_missing == "ask" and not problem else ""
    return Readiness(False, f"image {image}{base}{used} is missing: run `{command}`{note}",
                     _or_always(problem))


def _configured(loaded: Any) -> tuple[DockerSettings, str, tuple[str, ...]]:
    """The docker settings, the configured environment and the packages its sandbox needs (its spec's
    ``sandbox_packages`` and its settings' own), from the loaded configuration (None: the defaults)."""
    from rlm_sandbox_docker.engine import package_set

    if loaded is None:
        return _effective(None), "", ()
    settings = _effective(loaded.component("sandbox", "docker"))
    name = loaded.settings.run.environment
    try:
        from rlm_host.sdk.embedding import PluginHost

        spec = PluginHost().load().environments().get(name)
    except Exception:  # an unknown environment: the doctor's config row says so
        return settings, name, ()
    extra = getattr(loaded.component("environment", spec.name), "sandbox_packages", None) or ()
    return settings, spec.name, package_set([*spec.sandbox_packages, *extra])
