"""Everything a run needs, resolved before the first step: settings with overrides, the environment, the
sandbox, the model connectors, the trajectory file and the observability sinks.

Resolving up front means a bad name or value fails with one clear message before any model is called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import BaseModel, ValidationError

from rlm_host import logs
from rlm_host.config.models import RunSettings
from rlm_host.engine.rewards import RewardProfile
from rlm_host.errors import ConfigError, RlmError, UnknownComponentError
from rlm_host.events import EventBus
from rlm_host.llm.protocol import ModelConnector, ModelOptions
from rlm_host.llm.resolve import auto_model, resolve_connector
from rlm_host.sandbox.protocol import SandboxLimits, SandboxSession

NATIVE_FRAMEWORK = "native"
PREFERRED_SANDBOXES = ("monty", "docker")  # the default when installed and ready, in this order


@dataclass
class RunPlan:
    run: RunSettings
    run_id: str
    home: Path
    rewards: RewardProfile
    limits: SandboxLimits
    environment_factory: Callable[..., Any]
    environment_settings: Optional[BaseModel]
    sandbox_name: str
    sandbox_factory: Callable[..., SandboxSession]
    sandbox_settings: Optional[BaseModel]
    root_connector: ModelConnector
    sub_connector: ModelConnector
    sinks: list[tuple[str, Any]]
    make_connector: Callable[[str], ModelConnector]
    notices: list[str] = field(default_factory=list)  # said once at run start (e.g. "a tiny local model")
    _connectors: dict[str, ModelConnector] = field(default_factory=dict)

    @property
    def trajectory_path(self) -> Path:
        return self.home / "runs" / f"{self.run_id}.jsonl"

    def new_run_id(self) -> str:
        from rlm_host.trajectory.store import new_run_id

        return new_run_id()

    def open_sandbox(self) -> SandboxSession:
        return self.sandbox_factory(self.sandbox_settings, self.limits)

    def connector_for(self, model: str) -> ModelConnector:
        """A connector for ``llm_query(..., model="provider:model")``, built once per run tree."""
        if model not in self._connectors:
            self._connectors[model] = self.make_connector(model)
        return self._connectors[model]

    def attach_observers(self, bus: EventBus) -> list[Callable[[], None]]:
        """Subscribe the trajectory writer and the sinks; return what closes them."""
        from rlm_host.trajectory.store import TrajectoryWriter

        writer = TrajectoryWriter(self.home, self.run_id)
        bus.subscribe("trajectory", writer)
        closers: list[Callable[[], None]] = [writer.close]
        for name, sink in self.sinks:
            bus.subscribe(f"sink {name}", sink.handle)
            closers.append(sink.close)
        return closers

    def describe(self, task: str, context_meta: dict[str, Any]) -> dict[str, Any]:
        return {
            "task": task,
            "environment": self.run.environment,
            "framework": self.run.framework,
            "model": self.root_connector.name,
            "sub_model": self.sub_connector.name,
            "sandbox": self.sandbox_name,
            "settings": self.run.model_dump(mode="json"),
            "context": context_meta,
            "notices": list(self.notices),
        }


def plan_run(host: Any, loaded: Any, home: Path, options: dict[str, Any],
             connectors: Optional[dict[str, ModelConnector]]) -> RunPlan:  # fmt: skip
    run = _effective_run_settings(loaded.settings.run, options)
    if run.framework != NATIVE_FRAMEWORK:
        _refuse_framework(host, run.framework)
    env_spec = host.environments().get(run.environment)
    run.environment = env_spec.name
    sandbox_spec = _choose_sandbox(host, run.sandbox)
    options_for_models = ModelOptions(base_url=run.base_url, max_tokens=run.max_reply_tokens)

    def make_connector(model: str) -> ModelConnector:
        return resolve_connector(model, host=host, settings=loaded, options=options_for_models)

    given = connectors or {}
    notices = []
    if "root" not in given and run.model == "auto":
        run.model, notice = auto_model(host)
        notices += [notice] if notice else []
    root = given.get("root") or make_connector(run.model)
    sub = given.get("sub") or (make_connector(run.sub_model) if run.sub_model else root)
    from rlm_host.trajectory.store import new_run_id

    return RunPlan(
        run=run, run_id=new_run_id(), home=home, rewards=loaded.settings.rewards,
        limits=SandboxLimits(exec_timeout=run.exec_timeout),
        environment_factory=env_spec.load(), environment_settings=loaded.component("environment", env_spec.name),
        sandbox_name=sandbox_spec.name, sandbox_factory=sandbox_spec.load(),
        sandbox_settings=loaded.component("sandbox", sandbox_spec.name),
        root_connector=root, sub_connector=sub, sinks=_open_sinks(host, loaded, home, run.sinks),
        make_connector=make_connector, notices=notices,
    )  # fmt: skip


def _effective_run_settings(base: RunSettings, options: dict[str, Any]) -> RunSettings:
    unknown = sorted(set(options) - set(RunSettings.model_fields))
    if unknown:
        raise TypeError(f"run_task() got unknown option(s): {', '.join(unknown)}")
    merged = {**base.model_dump(), **{k: v for k, v in options.items() if v is not None}}
    try:
        return RunSettings.model_validate(merged)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid run option: {problems}") from None


def _refuse_framework(host: Any, name: str) -> None:
    registry = host.frameworks()
    if name not in registry:
        choices = [NATIVE_FRAMEWORK, *registry.names()]
        raise UnknownComponentError(f"unknown framework {name!r}", hint="choose one of: " + ", ".join(choices))
    raise RlmError(
        f"framework {name!r} is installed, but this rlm-host runs only the native loop",
        hint="use --framework native (framework adapters are run by their own plugin's command)",
    )


def _choose_sandbox(host: Any, name: str) -> Any:
    registry = host.sandboxes()
    if name != "auto":
        return registry.get(name)
    ranked = sorted(
        (spec for spec in registry if spec.security_boundary),
        key=lambda spec: PREFERRED_SANDBOXES.index(spec.name) if spec.name in PREFERRED_SANDBOXES else len(PREFERRED_SANDBOXES),
    )
    for spec in ranked:
        if spec.readiness().ok:
            return spec
    raise ConfigError(
        "no secure sandbox is installed and ready",
        hint="install one (pip install rlm-sandbox-monty), or opt in to the `process` runtime, which is crash "
        "isolation and NOT a security boundary, with --sandbox process",
    )


def _open_sinks(host: Any, loaded: Any, home: Path, names: list[str]) -> list[tuple[str, Any]]:
    """Sinks named in ``run.sinks``; one that fails to start is skipped with a warning (never fatal)."""
    sinks = []
    for name in names:
        spec = host.sinks().get(name)
        try:
            sinks.append((spec.name, spec.load()(loaded.component("sink", spec.name), home)))
        except Exception as exc:
            logs.get_logger("rlm.sinks").warning(f"sink {spec.name} could not start and is skipped: {exc}")
    return sinks
