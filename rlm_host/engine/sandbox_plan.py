"""Which sandbox a run gets, planned once for runs and for work outside them (scoring a benchmark case's project):
the runtime (named, or the best ready security boundary), its settings, limits, packages and project folder.

A runtime is chosen only if it is ready for the run's services, not just its settings: a session of it (made here,
never started) whose class defines ``prepare()`` makes ready what such sessions need before the run starts — the
docker runtime's image holding the environment's packages, built when ``[sandbox.docker] build_missing`` allows.
A named runtime that cannot be made ready stops the run before it starts (ConfigError, exit 2); ``auto`` goes on
to the next boundary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel

from rlm_host.components import Readiness
from rlm_host.config.protected import guard_folder, protected_folders
from rlm_host.errors import ConfigError, RlmError, SandboxError
from rlm_host.sandbox.protocol import SandboxLimits, SandboxSession
from rlm_host.services import SandboxServices


@dataclass(frozen=True)
class SandboxPlan:
    """A sandbox runtime chosen and configured: ``open()`` makes a fresh, unstarted session of it."""

    spec: Any
    settings: Optional[BaseModel]
    services: SandboxServices

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def open(self) -> SandboxSession:
        session: SandboxSession = self.spec.create(self.settings, self.services)
        return session


def plan_sandbox(host: Any, loaded: Any, home: Path, env_spec: Any, name: str, limits: SandboxLimits,
                 workspace: Optional[Path] = None) -> SandboxPlan:
    """The sandbox a run of ``env_spec`` gets with ``--sandbox name`` (``auto``: the best ready boundary), made
    ready for the run's services (``prepare_sandbox``) before the run starts."""
    packages = sandbox_packages_for(env_spec, loaded.component("environment", env_spec.name))
    services = SandboxServices(home=home, limits=limits, workspace=workspace, packages=packages)
    spec = choose_sandbox(host, loaded, name, env_spec, services)
    return SandboxPlan(spec, loaded.component("sandbox", spec.name), services)


def memory_for(context_meta: dict[str, Any]) -> int:
    """Sandbox memory, MB: generous next to the context (a copy in transit plus the live value)."""
    return max(2048, 512 + 6 * int(context_meta.get("total_chars", 0)) // 1_000_000)


def choose_sandbox(host: Any, loaded: Any, name: str, env_spec: Any = None,
                   services: Optional[SandboxServices] = None) -> Any:
    """The named runtime, or for ``auto`` the ready security boundary with the highest priority; for an
    environment that needs a workspace, only runtimes that can mount one. With a run's ``services``, a runtime is
    ready only once it is prepared for them (``prepare_sandbox``: the docker image holding the packages)."""
    registry = host.sandboxes()
    needs_workspace = bool(env_spec is not None and env_spec.workspace)
    if name != "auto":
        spec = registry.get(name)  # an unknown name: UnknownComponentError (exit 2)
        if needs_workspace and not spec.workspace:
            raise ConfigError(f"the {env_spec.name} environment edits a project folder, and the {spec.name} sandbox "
                              "cannot mount one", hint=_workspace_hint(registry, loaded))
        ready = prepare_sandbox(spec, loaded, services)
        if not ready.ok:  # a named runtime that cannot start is bad input, said before any model is called
            raise ConfigError(f"the {spec.name} sandbox is not ready: {ready.detail}",
                              hint=ready.hint or "rlm plugins doctor shows what each sandbox needs")
        return spec
    ranked = sorted((spec for spec in registry if spec.security_boundary and (spec.workspace or not needs_workspace)),
                    key=lambda spec: -spec.priority)
    unready: dict[str, Readiness] = {}  # why each candidate cannot serve: its settings, or this run's services
    for spec in ranked:
        ready = prepare_sandbox(spec, loaded, services)
        if ready.ok:
            return spec
        unready[spec.name] = ready
    why = f" ({'; '.join(f'{name}: {ready.detail}' for name, ready in unready.items())})" if unready else ""
    if needs_workspace:
        raise ConfigError(f"no sandbox that can mount the {env_spec.name} environment's project folder is ready "
                          f"as a security boundary{why}",
                          hint=_workspace_hint(registry, loaded, unready))
    not_boundaries = [spec.name for spec in registry if not spec.security_boundary]
    others = f", or opt in to {', '.join(not_boundaries)} (crash isolation, NOT a security boundary) with --sandbox " \
        f"{not_boundaries[0]}" if not_boundaries else ""
    raise ConfigError(f"no secure sandbox is installed and ready{why}", hint="install a sandbox plugin that is a "
                      f"security boundary (`rlm plugins doctor` shows what is not ready){others}")


def prepare_sandbox(spec: Any, loaded: Any, services: Optional[SandboxServices]) -> Readiness:
    """Whether ``spec`` can serve: its readiness with its settings, then, for a run's ``services``, made ready before
    the run starts for what its sessions need: a session is made (never started) and, if its runtime defines
    ``prepare()``, asked to (the docker runtime provides its image there, built when ``build_missing`` allows, with
    the progress on stderr). Why it cannot, as a Readiness; a session that cannot even be made here is left for the
    run to report, as before."""
    settings = loaded.component("sandbox", spec.name)
    ready = spec.readiness(settings)
    if not ready.ok or services is None:
        return ready
    try:
        session = spec.create(settings, services)
    except Exception:
        return Readiness(True, "not prepared: the run's own start says what is wrong")
    prepare = getattr(type(session), "prepare", None)
    if not callable(prepare):
        return Readiness(True, "nothing to prepare")
    try:
        session.prepare()
    except RlmError as exc:
        return Readiness(False, exc.message, exc.hint)
    except SandboxError as exc:
        return Readiness(False, str(exc))
    except Exception as exc:  # a runtime's bug: the run could not start either
        return Readiness(False, f"preparing the {spec.name} sandbox failed: {type(exc).__name__}: {exc}")
    return Readiness(True, "prepared")


def _workspace_hint(registry: Any, loaded: Any, known: Optional[dict[str, Readiness]] = None) -> str:
    """Which flag to pass: a ready runtime that can mount a folder but is not a security boundary (said so), and
    how to make a boundary that can ready (its own hint, or why it could not be prepared for this run: ``known``),
    or which plugin to install."""
    specs = [spec for spec in registry if spec.workspace]
    ready = {spec.name: (known or {}).get(spec.name) or spec.readiness(loaded.component("sandbox", spec.name))
             for spec in specs}
    options = [f"pass --sandbox {spec.name} (NOT a security boundary)" for spec in specs
               if not spec.security_boundary and ready[spec.name].ok]
    options += [f"use --sandbox {spec.name}" + ("" if state.ok else f", once ready: {state.hint or state.detail}")
                for spec in specs if spec.security_boundary for state in [ready[spec.name]]]
    if not any(spec.security_boundary for spec in specs):
        options.append("install a sandbox plugin that can (pip install rlm-sandbox-docker)")
    return "; or ".join(options) + " (`rlm plugins doctor` shows what is ready)"


def sandbox_packages_for(env_spec: Any, env_settings: Any) -> tuple[str, ...]:
    """What the environment's sandbox must import: its spec's packages, then those its settings add in a
    ``sandbox_packages`` field (a project's own test dependencies, say)."""
    extra = getattr(env_settings, "sandbox_packages", None) or ()
    return tuple(dict.fromkeys([*env_spec.sandbox_packages, *extra]))


def project_folder(workdir: Optional[Path], allow_any: bool = False) -> Path:
    """The run's project folder, resolved: ``--workdir`` (created when missing), else the current directory. An
    environment that writes files there refuses a home, desktop, documents or downloads folder and a system folder
    (the model would be editing them) unless ``allow_any`` (``--allow-any-workdir``)."""
    folder = Path(workdir or ".").expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--workdir {folder} is not a directory")
    guard_folder(folder, allow_any, "edit files in")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def guard_context_folders(context: Any, allow_any: bool = False) -> None:
    """Refuse a ``--context`` folder that is a home, desktop, documents, downloads or system folder (its keys,
    mail and browser profiles would go into the model's sandbox, and a sub-model's prompts) unless ``allow_any``."""
    if allow_any:
        return
    protected = protected_folders()
    for raw in context.paths:
        if raw == "-":
            continue
        folder = Path(raw).expanduser()
        if folder.is_dir() and folder.resolve() in protected:
            raise ConfigError(f"refusing to read {folder.resolve()} as the context: a home, documents or system "
                              "folder", hint="pass the project folder or the files you mean, or --allow-any-workdir "
                              "if you mean it")
