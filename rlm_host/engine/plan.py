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
from rlm_host.config.schema import RewardProfile, RunSettings
from rlm_host.context import PREVIEW_CHARS, describe_context
from rlm_host.engine.scope import new_run_id
from rlm_host.engine.sub_models import SubModels
from rlm_host.errors import ConfigError, RlmError
from rlm_host.results import SCHEMA_VERSION
from rlm_host.events import EventBus, Sink
from rlm_host.llm.prices import PriceTable
from rlm_host.llm.protocol import ModelConnector, ModelOptions, provider_of
from rlm_host.llm.resolve import auto_model, resolve_connector, split_model_string
from rlm_host.sandbox.protocol import SandboxError, SandboxLimits, SandboxSession
from rlm_host.services import HostServices, SandboxServices

NATIVE_FRAMEWORK = "native"
NO_SANDBOX = "none"  # the sandbox name recorded by a run whose environment runs no code
SINK_PLUGINS = " (sinks are plugins: pip install rlm-sink-<name>)"


@dataclass
class RunPlan:
    """A run tree ready to start: every component resolved, the context described once."""

    run: RunSettings
    run_id: str
    home: Path
    rewards: RewardProfile
    limits: SandboxLimits
    context_meta: dict[str, Any]
    environment_factory: Callable[..., Any]
    environment_settings: Optional[BaseModel]
    sandbox_name: str
    sandbox_spec: Any
    sandbox_settings: Optional[BaseModel]
    root_connector: ModelConnector
    sub_connector: ModelConnector
    sinks: list[tuple[str, Sink]]
    sub_models: SubModels  # what code may name in llm_query(..., model=...)
    notices: list[str] = field(default_factory=list)  # said once at run start (e.g. "a tiny local model")
    warnings: list[str] = field(default_factory=list)  # notices said on stderr too when no live view shows them
    workdir: Optional[Path] = None  # the project folder, for an environment whose spec says workspace=True
    sandbox_packages: tuple[str, ...] = ()
    framework_factory: Optional[Callable[..., Any]] = None  # None: the native loop
    framework_settings: Optional[BaseModel] = None
    writer: Any = None  # the TrajectoryWriter, once attach_observers made it
    context_on_disk: bool = False  # a TextFile context goes to the sandbox unread (else the runner reads it)

    @property
    def trajectory_path(self) -> Path:
        return self.home / "runs" / f"{self.run_id}.jsonl"

    def open_sandbox(self) -> SandboxSession:
        if self.sandbox_spec is None:
            raise SandboxError(f"the {self.run.environment} environment declares that it runs no code, so this run "
                               "has no sandbox")  # fmt: skip
        services = SandboxServices(home=self.home, limits=self.limits, workspace=self.workdir,
                                   packages=self.sandbox_packages)  # fmt: skip
        session: SandboxSession = self.sandbox_spec.create(self.sandbox_settings, services)
        return session

    def connector_for(self, model: str) -> ModelConnector:
        """A connector for ``llm_query(..., model=...)``: an allowed sub-model's, built once per run tree
        (``SubModelRefused`` for any other name)."""
        return self.sub_models.connector(model)

    def attach_observers(self, bus: EventBus) -> list[Callable[[], None]]:
        """Subscribe the trajectory writer and the sinks; return what closes them."""
        from rlm_host.trajectory.store import TrajectoryWriter

        from rlm_host.observability.delivery import SinkDelivery

        writer = self.writer = TrajectoryWriter(self.home, self.run_id)
        bus.subscribe("trajectory", writer)
        delivery = SinkDelivery(bus, self.sinks, flush_seconds=self.run.sink_flush_seconds,
                                call_seconds=self.run.sink_call_seconds)  # fmt: skip
        return [delivery.close, writer.close]  # sinks first: a sink_error they report still reaches the file

    def describe(self, task: str, context_meta: dict[str, Any]) -> dict[str, Any]:
        """The ``run_start`` event's data; its ``schema_version`` tells a reader the format of the whole file."""
        return {
            "schema_version": SCHEMA_VERSION,
            "task": task,
            "environment": self.run.environment,
            "framework": self.run.framework,
            "model": self.root_connector.name,
            "provider": provider_of(self.root_connector),
            "sub_model": self.sub_connector.name,
            "sub_provider": provider_of(self.sub_connector),
            "sandbox": self.sandbox_name,
            "settings": self.run.model_dump(mode="json"),
            "context": context_meta,
            "notices": list(self.notices),
        }


def plan_run(host: Any, loaded: Any, home: Path, options: dict[str, Any], context: Any,
             connectors: Optional[dict[str, ModelConnector]],
             prices: Optional[PriceTable] = None) -> RunPlan:  # fmt: skip
    """Resolve every name and value of a run before its first step (one clear error if any is wrong).

    ``prices`` (the table the run's costs are counted with; by default the settings' own) says whether a cost
    budget can be enforced: see :func:`cost_notices`."""
    run = _effective_run_settings(loaded.settings.run, options)
    framework_spec = _framework(host, run.framework)
    if framework_spec is not None:
        run.framework = framework_spec.name
    env_spec = host.environments().get(run.environment)
    run.environment = env_spec.name
    needs_sandbox = env_spec.runs_code or run.sandbox != "auto"
    sandbox_spec = choose_sandbox(host, loaded, run.sandbox, env_spec) if needs_sandbox else None
    workdir = project_folder(run.workdir, run.allow_any_workdir) if env_spec.workspace else None
    options_for_models = ModelOptions(base_url=run.base_url, max_tokens=run.max_reply_tokens)
    context_meta = describe_context(context, preview_chars=PREVIEW_CHARS)

    def make_connector(model: str) -> ModelConnector:
        return resolve_connector(model, host=host, settings=loaded, options=options_for_models, home=home)

    given = connectors or {}
    notices = []
    if "root" not in given and run.model == "auto":
        run.model, notice = auto_model(host)
        notices += [notice] if notice else []
    root = given.get("root") or make_connector(run.model)
    sub = given.get("sub") or (make_connector(run.sub_model) if run.sub_model else root)
    root_name = root.name if "root" in given else run.model
    sub_name = sub.name if "sub" in given else (run.sub_model or root_name)
    for name in run.allowed_sub_models:
        split_model_string(name, host)  # a name that names no provider fails now, not at the code's first call
    sub_models = SubModels(run.allowed_sub_models, {root_name: root, sub_name: sub}, make_connector, host)
    warnings = cost_notices(run, [root, sub], prices or PriceTable.from_settings(loaded.settings))
    notices += warnings
    return RunPlan(
        run=run, run_id=new_run_id(), home=home, rewards=loaded.settings.rewards,
        limits=SandboxLimits(exec_timeout=run.exec_timeout, memory_mb=memory_for(context_meta)),
        context_meta=context_meta,
        environment_factory=env_spec.load(), environment_settings=loaded.component("environment", env_spec.name),
        sandbox_name=sandbox_spec.name if sandbox_spec else NO_SANDBOX, sandbox_spec=sandbox_spec,
        sandbox_settings=loaded.component("sandbox", sandbox_spec.name) if sandbox_spec else None,
        root_connector=root, sub_connector=sub, sinks=_open_sinks(host, loaded, home, run.sinks, notices),
        sub_models=sub_models, notices=notices, warnings=warnings, workdir=workdir,
        sandbox_packages=sandbox_packages_for(env_spec, loaded.component("environment", env_spec.name)),
        framework_factory=framework_spec.load() if framework_spec is not None else None,
        framework_settings=loaded.component("framework", framework_spec.name) if framework_spec is not None else None,
        context_on_disk=env_spec.context_on_disk and framework_spec is None,
    )  # fmt: skip


def cost_notices(run: RunSettings, models: list[ModelConnector], prices: PriceTable) -> list[str]:
    """Under a cost budget, a notice naming the models nobody can price (no ``[[prices]]`` entry, not free, not in
    genai-prices, and the connector does not report its cost), whose calls the budget cannot count; with
    ``run.strict``, a ConfigError refusing the run instead. Nothing without a budget."""
    if run.max_cost is None:
        return []
    unpriced = sorted({model.name for model in models if not prices.can_price(model)})
    if not unpriced:
        return []
    names = ", ".join(unpriced)
    hint = ("give it a price in rlm.toml (USD per 1M tokens; put in its real prices):\n"
            f'  [[prices]]\n  model = "{unpriced[0]}"\n  input = 1.0\n  output = 2.0')
    if run.strict:
        raise ConfigError(f"--max-cost ${run.max_cost:g} cannot be enforced: no price is known for {names}",
                          hint=hint + "\nor run without --strict")  # fmt: skip
    return [f"no price is known for {names}: --max-cost ${run.max_cost:g} counts only the calls it can price "
            f"(--strict refuses such a run); {hint}"]  # fmt: skip


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


def _framework(host: Any, name: str) -> Any:
    """The framework adapter's spec (aliases too), None for the native loop; UnknownComponentError otherwise."""
    if name == NATIVE_FRAMEWORK:
        return None
    return host.frameworks().get(name, other_choices=(NATIVE_FRAMEWORK,),
                                 where_more=" (adapters are plugins: pip install rlm-adapter-<name>)")


def memory_for(context_meta: dict[str, Any]) -> int:
    """Sandbox memory, MB: generous next to the context (a copy in transit plus the live value)."""
    return max(2048, 512 + 6 * int(context_meta.get("total_chars", 0)) // 1_000_000)


def choose_sandbox(host: Any, loaded: Any, name: str, env_spec: Any = None) -> Any:
    """The named runtime, or for ``auto`` the ready security boundary with the highest priority; for an
    environment that needs a workspace, only runtimes that can mount one."""
    registry = host.sandboxes()
    needs_workspace = bool(env_spec is not None and env_spec.workspace)
    able = [spec.name for spec in registry if spec.workspace]
    if name != "auto":
        spec = registry.get(name)
        if needs_workspace and not spec.workspace:
            raise ConfigError(f"the {env_spec.name} environment edits a project folder, and the {spec.name} sandbox "
                              "cannot mount one", hint=_workspace_hint(registry, loaded, able))  # fmt: skip
        return spec
    ranked = sorted((spec for spec in registry if spec.security_boundary and (spec.workspace or not needs_workspace)),
                    key=lambda spec: -spec.priority)  # fmt: skip
    for spec in ranked:
        if spec.readiness(loaded.component("sandbox", spec.name)).ok:
            return spec
    if needs_workspace:
        raise ConfigError(f"no sandbox that can mount the {env_spec.name} environment's project folder is ready "
                          "as a security boundary", hint=_workspace_hint(registry, loaded, able))  # fmt: skip
    not_boundaries = [spec.name for spec in registry if not spec.security_boundary]
    raise ConfigError(
        "no secure sandbox is installed and ready",
        hint="install a sandbox plugin that is a security boundary (`rlm plugins doctor` shows what is not ready)"
        + (f", or opt in to {', '.join(not_boundaries)} (crash isolation, NOT a security boundary) with --sandbox"
           f" {not_boundaries[0]}" if not_boundaries else ""),
    )  # fmt: skip


def _workspace_hint(registry: Any, loaded: Any, able: list[str]) -> str:
    """Which flag to pass: a ready runtime that can mount a folder but is not a security boundary (said so), and
    how to make a boundary that can ready (its own hint), or which plugin to install."""
    specs = [registry.get(name) for name in able]
    ready = {spec.name: spec.readiness(loaded.component("sandbox", spec.name)) for spec in specs}
    unsafe = [spec.name for spec in specs if not spec.security_boundary and ready[spec.name].ok]
    options = [f"pass --sandbox {name} (NOT a security boundary)" for name in unsafe]
    for spec in specs:
        if spec.security_boundary:
            state = ready[spec.name]
            how = "" if state.ok else f", once ready: {state.hint or state.detail}"
            options.append(f"use --sandbox {spec.name}{how}")
    if not any(registry.get(name).security_boundary for name in able):
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
    if not allow_any and folder in protected_folders():
        raise ConfigError(f"refusing to let the model edit files in {folder}: a home, documents or system folder",
                          hint="run from a project folder, pass --workdir DIR, or --allow-any-workdir if you mean it")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def protected_folders() -> set[Path]:
    """Folders an environment that edits files never works in by default: the user's home and its desktop,
    documents and downloads folders, the filesystem root and the system's own folders."""
    home = Path.home().resolve()
    system = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/sys", "/usr",
              "/var", "/System", "/Library", "/Applications", "/Users", "/home", "/private", "/tmp")  # fmt: skip
    folders = {home, *(home / name for name in ("Desktop", "Documents", "Downloads"))}
    return {p.resolve() if p.exists() else p for p in folders | {Path(s) for s in system}}


def _open_sinks(host: Any, loaded: Any, home: Path, names: list[str], notices: list[str]) -> list[tuple[str, Sink]]:
    """Sinks named in ``run.sinks`` (an unknown name is an error); one that fails to start is skipped with a
    warning and a notice in the run's record (never fatal: observability must not stop a run)."""
    sinks = []
    services = HostServices(home=home)
    registry = host.sinks()
    specs = {}  # a name given twice: one sink
    for name in names:
        spec = registry.get(name, where_more=SINK_PLUGINS)
        specs[spec.name] = spec
    for spec in specs.values():
        try:
            sinks.append((spec.name, spec.create(loaded.component("sink", spec.name), services)))
        except Exception as exc:
            problem = f"sink {spec.name} not started: {type(exc).__name__}: {exc}"
            logs.get_logger("rlm.sinks").warning(problem, sink=spec.name, error=str(exc))
            notices.append(problem)
    return sinks
