"""Everything a run needs, resolved before the first step into one immutable ``RunPlan``: the run settings, the
environment (resolved once), the context loaded the way that environment needs, the sandbox, the model
connectors, the trajectory writer and the observability sinks.

Resolving up front means a bad name or value fails with one clear message before any model is called.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from pydantic import BaseModel

from rlm_host.config.schema import RewardProfile, RunSettings
from rlm_host.context import PREVIEW_CHARS, ContextFiles, TextFile, describe_context
from rlm_host.engine.context_loading import load_context_with_loaders
from rlm_host.engine.sandbox_plan import SandboxPlan, guard_context_folders, memory_for, plan_sandbox, project_folder
from rlm_host.engine.scope import new_run_id
from rlm_host.engine.sub_models import SubModels
from rlm_host.environments.output_type import OutputType, output_type_of
from rlm_host.environments.repl_tools import Tool, plan_toolboxes, resolve_tools
from rlm_host.errors import ConfigError
from rlm_host.results import SCHEMA_VERSION
from rlm_host.events import EventBus
from rlm_host.models.prices import PriceTable
from rlm_host.observability.delivery import SinkStarter
from rlm_host.models.protocol import SAMPLING_OPTIONS, ModelConnector, ModelOptions, provider_of
from rlm_host.models.resolve import auto_model, resolve_connector, split_model_string
from rlm_host.sandbox.protocol import SandboxError, SandboxLimits, SandboxSession
from rlm_host.services import HostServices

if TYPE_CHECKING:  # types only: the planner is given these, never imports their modules at run time
    from rlm_host.components import EnvironmentSpec, FrameworkSpec
    from rlm_host.config.loader import LoadedSettings
    from rlm_host.plugins.host import PluginHost
    from rlm_host.trajectory.store import TrajectoryWriter

NATIVE_FRAMEWORK = "native"
NO_SANDBOX = "none"  # the sandbox name recorded by a run whose environment runs no code
SINK_PLUGINS = " (sinks are plugins: pip install rlm-sink-<name>)"


@dataclass(frozen=True)
class RunPlan:
    """A run tree ready to start: every component resolved, the context loaded and described once."""

    run: RunSettings  # the effective run settings: environment, framework and model resolved to their names
    settings: "LoadedSettings"  # all of the run's settings: the sections of an environment it builds (nested)
    run_id: str
    rewards: RewardProfile
    prices: PriceTable  # the run's ``[[prices]]`` over the built-in table: what its calls cost
    context: Any  # what the environment gets: a value, a Path (context_as_path) or a TextFile (context_on_disk)
    context_meta: dict[str, Any]
    environment_factory: Callable[..., Any]
    environment_settings: Optional[BaseModel]
    sandbox: Optional[SandboxPlan]  # None: the environment runs no code
    limits: SandboxLimits
    root_connector: ModelConnector
    sub_connector: ModelConnector
    sub_models: SubModels  # what code may name in llm_query(..., model=...)
    sinks: list[tuple[str, SinkStarter]]  # each sink's name and the call that makes it (in its worker)
    writer: "TrajectoryWriter"  # the trajectory file <home>/runs/<run_id>.jsonl
    notices: list[str] = field(default_factory=list)  # said once at run start (e.g. "a tiny local model")
    warnings: list[str] = field(default_factory=list)  # notices said on stderr too when no live view shows them
    workdir: Optional[Path] = None  # the project folder, for an environment whose spec says workspace=True
    framework_factory: Optional[Callable[..., Any]] = None  # None: the native loop
    framework_settings: Optional[BaseModel] = None
    sources: dict[str, str] = field(default_factory=dict)  # run option → where its value came from, when not default
    sampling: dict[str, dict[str, Any]] = field(default_factory=dict)  # role → the sampling options sent
    output: Optional[OutputType] = None  # the type the root run's answer must have ([run] output_type)
    tools: tuple[Tool, ...] = ()  # the user's functions in the root run's REPL
    sub_tools: tuple[Tool, ...] = ()  # … and in its child runs'
    toolboxes: tuple[Callable[[], Any], ...] = ()  # each opens a toolbox (MCP servers…) for the run tree
    context_files: tuple[str, ...] = ()  # the files the context was read from: recorded (rlm runs fork), not shown

    @property
    def sandbox_name(self) -> str:
        return self.sandbox.name if self.sandbox is not None else NO_SANDBOX

    def open_sandbox(self) -> SandboxSession:
        if self.sandbox is None:
            raise SandboxError(f"the {self.run.environment} environment declares that it runs no code, so this run "
                               "has no sandbox")
        return self.sandbox.open()

    def attach_observers(self, bus: EventBus) -> list[Callable[[], None]]:
        """Subscribe the trajectory writer and the sinks; return what closes them."""
        from rlm_host.observability.delivery import SinkDelivery

        bus.subscribe("trajectory", self.writer)
        delivery = SinkDelivery(bus, self.sinks, flush_seconds=self.run.sink_flush_seconds,
                                call_seconds=self.run.sink_call_seconds)
        # the sinks deliver in the background: the answer is not kept waiting for a slow backend
        return [delivery.close_in_background, self.writer.close]

    def describe(self, task: str, context_meta: dict[str, Any], question: Optional[str] = None) -> dict[str, Any]:
        """The ``run_start`` event's data; its ``schema_version`` tells a reader the format of the whole file.
        ``question``: the user's own question when the task wraps it (a chat turn's task carries the conversation)."""
        return {
            "schema_version": SCHEMA_VERSION, "task": task, **({"question": question} if question is not None else {}),
            "environment": self.run.environment, "framework": self.run.framework,
            "model": self.root_connector.name, "provider": provider_of(self.root_connector),
            "sub_model": self.sub_connector.name, "sub_provider": provider_of(self.sub_connector),
            "sandbox": self.sandbox_name, "settings": self.run.model_dump(mode="json"), "sampling": dict(self.sampling),
            "settings_sources": dict(self.sources),
            "context": {**context_meta, **({"files": list(self.context_files)}  # the root's, for rlm runs fork
                                            if self.context_files and context_meta is self.context_meta else {})},
            "notices": list(self.notices),
        }


def plan_run(host: "PluginHost", loaded: "LoadedSettings", home: Path, context: Any,
             connectors: Optional[dict[str, Any]] = None,
             pool: Optional[dict[tuple[str, str], ModelConnector]] = None) -> RunPlan:
    """Resolve every name and value of a run before its first step (one clear error if any is wrong).

    ``loaded``: the settings with the front door's run options merged in (``LoadedSettings.with_run``), so each value's
    source is known; ``context``: the context itself, or ``ContextFiles`` to load here as the environment needs;
    ``connectors``: ``root`` / ``sub`` connectors to use instead of the settings' models, or ``wrap``, a callable given
    each connector planned (rlm-runs' fork: ``ForkConnector``). ``pool`` (model and options →
    connector) keeps the connectors built here for the next run that passes it: a chat session's turns play one
    script on."""
    run: RunSettings = loaded.settings.run
    framework_spec = None if run.framework == NATIVE_FRAMEWORK else host.frameworks().get(
        run.framework, other_choices=(NATIVE_FRAMEWORK,),
        where_more=" (frameworks are plugins: pip install rlm-adapter-<name>)")
    env_spec = host.environments().get(run.environment)
    on_disk = env_spec.context_on_disk and framework_spec is None
    files = None
    if isinstance(context, ContextFiles):
        guard_context_folders(context, run.allow_any_workdir)
        files = None if "-" in context.paths else [str(Path(p).resolve()) for p in context.paths]
        context = load_context_with_loaders(  # loaded as the environment takes them (see load_context)
            list(context.paths), host, loaded, home, as_path=env_spec.context_as_path, lazy_text=True)
    context_meta = describe_context(context, preview_chars=PREVIEW_CHARS)
    if isinstance(context, TextFile) and not on_disk:
        context = context.read()  # this environment (or framework) works with the text itself
    workdir = project_folder(run.workdir, run.allow_any_workdir) if env_spec.workspace else None
    limits = SandboxLimits(exec_timeout=run.exec_timeout, memory_mb=memory_for(context_meta))
    sandbox = (plan_sandbox(host, loaded, home, env_spec, run.sandbox, limits, workdir)
               if env_spec.runs_code or run.sandbox != "auto" else None)
    sampling = Sampling(run)
    given = connectors or {}
    notices = [not_a_boundary(sandbox)] if sandbox is not None and not sandbox.spec.security_boundary else []
    model = run.model
    if "root" not in given and model == "auto":
        model, notice = auto_model(host)
        notices += [notice] if notice else []

    def make_connector(model: str, role: str = "sub") -> ModelConnector:
        options = ModelOptions(base_url=run.base_url, max_tokens=run.max_reply_tokens,
                               **sampling.sent(role, model, host))
        key = (model, options.model_dump_json())
        if pool is not None and key in pool:  # a chat session's turns share their connectors (a script goes on)
            return pool[key]
        connector = resolve_connector(model, host=host, settings=loaded, options=options, home=home)
        if pool is not None:
            pool[key] = connector
        return connector

    root = given.get("root") or make_connector(model, "root")
    own_sub = run.sub_model or (model if run.sub_sampling and "root" not in given else None)
    sub = given.get("sub") or (make_connector(own_sub) if own_sub else root)
    wrap = given.get("wrap")  # a fork answers its first steps from a recording: (connector) -> connector
    if wrap is not None:
        root, sub = (wrap(root),) * 2 if sub is root else (wrap(root), wrap(sub))
    root_name = root.name if "root" in given else model
    sub_name = sub.name if "sub" in given else (run.sub_model or root_name)
    for name in run.allowed_sub_models:
        split_model_string(name, host)  # a name that names no provider fails now, not at the code's first call
    sub_models = SubModels(run.allowed_sub_models, {root_name: root, sub_name: sub}, make_connector, host)
    notices += sampling.notices
    output = output_type_of(run.output_type, where=loaded.source_of("run.output_type"))
    tools = resolve_tools(run.tools, where=loaded.source_of("run.tools"))
    sub_tools = tools if run.sub_tools is None else resolve_tools(run.sub_tools,
                                                                  where=loaded.source_of("run.sub_tools"))
    toolboxes = plan_toolboxes(host, run, workdir or Path.cwd(), home)
    prices = PriceTable.from_settings(loaded.settings)  # the run's costs are counted with it
    if run.branch_width > 1:
        check_branching(run, env_spec, framework_spec, root, prices)
    warnings = cost_notices(run, [root, sub], prices)
    notices += warnings
    sink_names = run_sinks(host, run.sinks)
    run = run.model_copy(update={"environment": env_spec.name, "model": model, "sinks": sink_names,
                                 "framework": framework_spec.name if framework_spec else NATIVE_FRAMEWORK})
    sinks = _sink_starters(host, loaded, home, sink_names)
    run_id = new_run_id()
    from rlm_host.trajectory.store import TrajectoryWriter  # the writer is made last: a plan that fails leaves no file

    return RunPlan(
        run=run, settings=loaded, run_id=run_id, rewards=loaded.settings.rewards, context=context,
        context_meta=context_meta, limits=limits, sandbox=sandbox, writer=TrajectoryWriter(home, run_id),
        environment_factory=env_spec.load(), environment_settings=loaded.component("environment", env_spec.name),
        root_connector=root, sub_connector=sub, sub_models=sub_models, sinks=sinks,
        notices=notices, warnings=warnings, workdir=workdir, sources=_sources(loaded),
        framework_factory=framework_spec.load() if framework_spec is not None else None,
        framework_settings=loaded.component("framework", framework_spec.name) if framework_spec is not None else None,
        sampling=sampling.recorded, tools=tools, sub_tools=sub_tools, output=output, toolboxes=toolboxes,
        context_files=tuple(files or ()), prices=prices,
    )


def not_a_boundary(sandbox: SandboxPlan) -> str:
    """The first thing a run in a runtime that is no security boundary says (``--sandbox process``)."""
    where = (f" and can change {sandbox.services.workspace} and what lies beside it"
             if sandbox.services.workspace else "")
    return (f"sandbox {sandbox.name} is NOT a security boundary: the model's code and commands run with your user's "
            f"rights, can read your files{where}; use a boundary (monty, docker) for code you do not trust")


class Sampling:
    """The run's sampling options per role (``temperature``, ``top_p``, ``seed``; sub-calls take ``sub_sampling``
    over them), filtered for each model to what its provider honours: what is left out is one notice per provider
    and option, and what each role's connector was given is recorded with the run."""

    def __init__(self, run: RunSettings) -> None:
        root = {name: getattr(run, name) for name in SAMPLING_OPTIONS if getattr(run, name) is not None}
        sub = {**root, **run.sub_sampling}
        self.roles = {"root": root, "sub": sub | ({"seed": int(sub["seed"])} if "seed" in sub else {})}
        self.notices: list[str] = []
        self.recorded: dict[str, dict[str, Any]] = {}

    def sent(self, role: str, model: str, host: "PluginHost") -> dict[str, Any]:
        """The options a connector of ``model`` in ``role`` gets (what its provider honours)."""
        wanted = self.roles[role]
        if not wanted:
            return {}
        provider = host.providers().get(split_model_string(model, host)[0])
        dropped = [name for name in wanted if name not in provider.sampling]
        said = [f"{provider.name} does not take {name}: it is not sent to {model}" for name in dropped]
        self.notices += [notice for notice in said if notice not in self.notices]
        sent = {name: value for name, value in wanted.items() if name not in dropped}
        self.recorded.setdefault(role, sent)
        return sent


def _sources(loaded: "LoadedSettings") -> dict[str, str]:
    """Where each run option that is not a default came from (``--max-steps``, ``RLM(model=…)``, a file)."""
    return {name: source for name in RunSettings.model_fields
            if (source := loaded.source_of(f"run.{name}")) != "default"}


def cost_notices(run: RunSettings, models: list[ModelConnector], prices: PriceTable) -> list[str]:
    """Under a cost budget, a notice naming the models nobody can price (no ``[[prices]]`` entry, not free, not in
    genai-prices, and the connector does not report its cost), whose calls the budget cannot count; with
    ``run.strict``, a ConfigError refusing the run instead. Nothing without a budget."""
    unpriced = [] if run.max_cost is None else sorted({model.name for model in models if not prices.can_price(model)})
    if not unpriced:
        return []
    names = ", ".join(unpriced)
    hint = ("give it a price in your config file or a trusted rlm.toml (USD per 1M tokens; put in its real prices):\n"
            f'  [[prices]]\n  model = "{unpriced[0]}"\n  input = 1.0\n  output = 2.0')
    if run.strict:
        raise ConfigError(f"--max-cost ${run.max_cost:g} cannot be enforced: no price is known for {names}",
                          hint=hint + "\nor run without --strict")
    return [f"no price is known for {names}: --max-cost ${run.max_cost:g} counts only the calls it can price "
            f"(--strict refuses such a run); {hint}"]


def check_branching(run: RunSettings, env_spec: "EnvironmentSpec", framework_spec: Optional["FrameworkSpec"],
                    root: ModelConnector, prices: PriceTable) -> None:
    """A ``branch_width`` the run can take: at most ``MAX_BRANCH_WIDTH`` (the error estimates what more would
    cost), in an environment that tries replies in a copy of its REPL, with no framework."""
    from rlm_host.engine.branching import MAX_BRANCH_WIDTH

    width = run.branch_width
    if framework_spec is not None or not hasattr(env_spec.load(), "trial"):
        where = f"the {framework_spec.name} framework" if framework_spec else f"the {env_spec.name} environment"
        raise ConfigError(f"--branch-width {width}: {where} cannot try replies in a copy of its REPL",
                          hint="branching works in the native loop of pure_rlm (and environments built on it)")
    if width > MAX_BRANCH_WIDTH:
        calls = width * run.max_steps
        price = prices.lookup(root.name, base_url=getattr(root, "base_url", None))
        estimate = (f"; at {root.name}'s price, about ${price.cost(calls * 4000, calls * 300):,.2f} for 4,000 "
                    "prompt and 300 reply tokens a call" if price is not None else "")
        raise ConfigError(f"--branch-width {width} is more than {MAX_BRANCH_WIDTH}: up to {calls:,} root model calls "
                          f"for {run.max_steps} steps ({width} a step, each also a copy of the REPL){estimate}",
                          hint=f"use at most --branch-width {MAX_BRANCH_WIDTH}")


def run_sinks(host: "PluginHost", names: Optional[list[str]]) -> list[str]:
    """The sinks a run feeds, by their registered names (an unknown name is an error, a name given twice is one
    sink): ``names`` (``[run] sinks``), or when it is not set every installed sink whose spec says ``default``."""
    registry = host.sinks()
    if names is None:
        return [spec.name for spec in registry if spec.default]
    return list(dict.fromkeys(registry.get(name, where_more=SINK_PLUGINS).name for name in names))


def _sink_starters(host: "PluginHost", loaded: "LoadedSettings", home: Path,
                   names: list[str]) -> list[tuple[str, SinkStarter]]:
    """The sinks ``names`` (see :func:`run_sinks`) as calls that make them: their settings are read now (a bad
    value is the usual clear error), the sinks themselves are made by their delivery workers beside the run (see
    ``rlm_host.observability.delivery``); one that cannot start is disabled with a warning and a ``sink_error``
    event (never fatal: observability must not stop a run)."""
    services = HostServices(home=home)
    return [(spec.name, partial(spec.create, loaded.component("sink", spec.name), services))
            for spec in map(host.sinks().get, names)]
