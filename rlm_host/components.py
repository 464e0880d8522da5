"""Typed registration records: what a plugin hands the host for each component it provides.

Records are plain frozen dataclasses (not pydantic) so that registering plugins at CLI start costs almost
nothing. Each record names its implementation lazily, as an import path ``"package.module:attribute"``, so
heavy frameworks load only when a component is used; an object given directly is used as it is.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass, fields
from typing import Any, ClassVar, NamedTuple, Union

from rlm_host.errors import PluginError

#: An implementation: "package.module:attribute" (imported on first use), or the object itself.
LazyRef = Union[str, Any]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def normalize_name(name: str) -> str:
    """The form used to compare component names: lower case, '-' and '_' equivalent."""
    return name.strip().lower().replace("-", "_")


class MissingAttribute(AttributeError):
    """The module of an import path was imported, but it has no attribute of that name."""


def import_object(ref: str) -> Any:
    """What ``"package.module:attr.path"`` names (the module itself when no attribute follows): the one importer of
    plugin entry points, component records, ``--tool`` functions and bounded targets, each wrapping its failures
    in its own message. Raises what the import raises, or :class:`MissingAttribute`."""
    module_name, _, attr_path = ref.partition(":")
    obj: Any = importlib.import_module(module_name.strip())
    for part in filter(None, attr_path.strip().split(".")):
        try:
            obj = getattr(obj, part)
        except AttributeError as exc:
            raise MissingAttribute(f"{module_name!r} has no attribute {attr_path!r}") from exc
    return obj


def resolve(ref: LazyRef, *, what: str = "object") -> Any:
    """Import and return what a LazyRef names; a clear PluginError if it cannot be found."""
    if not isinstance(ref, str):
        return ref
    module_name, sep, attr_path = ref.partition(":")
    if not sep or not module_name or not attr_path:
        raise PluginError(f"{what}: bad import path {ref!r} (expected 'package.module:attribute')")
    try:
        return import_object(ref)
    except ImportError as exc:
        raise PluginError(f"{what}: cannot import {module_name!r}: {exc}") from exc
    except MissingAttribute as exc:
        raise PluginError(f"{what}: {exc}") from exc


def run_check(check: LazyRef, what: str, settings: Any = None) -> "Readiness":
    """Call a readiness check as ``check(settings)``; one that raises or returns the wrong type is a failed
    check, not a crash."""
    try:
        result = resolve(check, what=f"{what} check")(settings)
    except Exception as exc:  # a plugin's check must never take the doctor down
        return Readiness(False, f"{what} check raised {type(exc).__name__}: {exc}")
    if not isinstance(result, Readiness):
        return Readiness(False, f"{what} check returned {type(result).__name__}, not Readiness")
    return result


class Readiness(NamedTuple):
    """The answer of a readiness check: ok or not, a detail line, and how to fix it when not ok."""

    ok: bool
    detail: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Component:
    """Fields shared by every kind of component; subclasses set ``kind`` and may add typed fields.

    A kind that adds no field subclasses this without ``@dataclass`` (it inherits the generated methods, and
    ``rlm`` starts faster: each decorated class costs about 0.6 ms at every start).

    ``factory`` is called as ``factory(settings, services)`` (see ``rlm_host.services``). ``requires`` lists
    the top-level modules the implementation imports; the default readiness check looks them up with
    ``importlib.util.find_spec`` (nothing is imported). ``check`` replaces that default check and is called as
    ``check(settings)``; ``install_hint`` says how to make a missing requirement available, and ``settings``
    names a pydantic model validating the component's config section ``[<kind>.<name>]``.
    """

    kind: ClassVar[str] = "component"

    name: str
    description: str
    factory: LazyRef
    aliases: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    install_hint: str = ""
    check: LazyRef | None = None
    settings: LazyRef | None = None

    def __post_init__(self) -> None:
        for value in (self.name, *self.aliases):
            if not isinstance(value, str) or not _NAME_RE.match(value):
                raise PluginError(f"{self.kind} name {value!r} is not valid: use lower-case letters, digits, '.', '-' "
                                  "or '_'")
        if not self.description or "\n" in self.description:
            raise PluginError(f"{self.kind} {self.name!r}: description must be one non-empty line")
        for field in fields(self):  # a list given for a tuple field (nested ones too: prices) made hashable
            if str(field.type).startswith("tuple"):
                object.__setattr__(self, field.name, tuple(tuple(v) if isinstance(v, list) else v
                                                           for v in getattr(self, field.name)))

    @property
    def names(self) -> tuple[str, ...]:
        """The name followed by its aliases."""
        return (self.name, *self.aliases)

    def load(self) -> Any:
        """Import and return the implementation (a class or factory function)."""
        return resolve(self.factory, what=f"{self.kind} {self.name!r}")

    def create(self, settings: Any, services: Any) -> Any:
        """Build the component: ``factory(settings, services)``, the one convention of every kind."""
        return self.load()(settings, services)

    def settings_model(self) -> Any | None:
        """The pydantic model for ``[<kind>.<name>]``, or None when the component takes no settings."""
        return None if self.settings is None else resolve(self.settings, what=f"{self.kind} {self.name!r} settings")

    def readiness(self, settings: Any = None) -> Readiness:
        """Whether the component can be used here (``settings``: its validated section); never raises."""
        if self.check is not None:
            result = run_check(self.check, f"{self.kind} {self.name!r}", settings)
            return result._replace(hint=self.install_hint) if not result.ok and not result.hint else result
        return self.installed()

    def installed(self) -> Readiness:
        """Whether the modules of ``requires`` can be imported (looked up, not imported): the default check."""
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if missing:
            return Readiness(False, "missing module(s): " + ", ".join(missing), self.install_hint)
        return Readiness(True, "requirements importable" if self.requires else "no external requirements")


@dataclass(frozen=True)
class EnvironmentSpec(Component):
    """An RLM environment: the rulebook of actions, prompts and rewards (pure_rlm, generic, traces…).

    ``context_as_path``: the environment reads its ``--context`` file itself, so ``rlm run`` does not load it
    and the environment receives the file's ``pathlib.Path``, unread, as ``ctx.context`` (a file of gigabytes
    never enters memory). Such an environment takes exactly one file.
    ``runs_code``: False for an environment whose actions never run model code (trace analysis over an index):
    ``--sandbox auto`` then picks and checks no sandbox, and the run records its sandbox as ``none``.
    ``context_on_disk``: the environment only hands ``ctx.context`` to its sandbox session (``set_variable``), so
    a large text file may arrive as a ``TextFile`` that stays on disk and the session loads (the host never holds
    the text); other environments, and framework runs, get the text.
    ``workspace``: the environment edits the run's project folder (``--workdir``) through its sandbox, so only a
    runtime declaring ``workspace=True`` can serve it; ``sandbox_packages``: what its sandbox must be able to
    import (``SandboxServices.packages``), to which its settings may add with a ``sandbox_packages`` field.
    """

    kind: ClassVar[str] = "environment"

    context_as_path: bool = False
    context_on_disk: bool = False
    runs_code: bool = True
    workspace: bool = False
    sandbox_packages: tuple[str, ...] = ()


@dataclass(frozen=True)
class FrameworkSpec(Component):
    """A framework running a task through another agent framework (DSPy, ADK, Pydantic AI…).

    ``mode``: ``native_rlm`` when the framework itself implements the RLM loop (dspy.RLM: code, sub-calls,
    SUBMIT), ``agent`` when it is a tool-calling agent given the sandbox as tools. The factory is called as
    ``factory(settings, FrameworkContext)`` and returns a ``Framework`` (``rlm_host.sdk.frameworks``).
    """

    kind: ClassVar[str] = "framework"

    mode: str = "agent"


@dataclass(frozen=True)
class SandboxSpec(Component):
    """A sandbox runtime executing model-written code in a persistent REPL session.

    ``security_boundary`` says whether the runtime isolates hostile code (Monty, Docker) or only crashes
    (a plain subprocess). Runtimes that are not a boundary are used only when asked for by name.
    ``priority`` ranks the boundaries for ``--sandbox auto``: the ready one with the highest priority wins.
    ``workspace``: the runtime can make a host folder its sessions' read-write working directory
    (``SandboxServices.workspace``), which environments that edit a project need; Monty, with no filesystem,
    cannot.
    """

    kind: ClassVar[str] = "sandbox"

    security_boundary: bool = False
    isolation: str = ""
    priority: int = 0
    workspace: bool = False


@dataclass(frozen=True)
class SinkSpec(Component):
    """An observability sink that receives every run event (local JSONL, OpenTelemetry, MLflow…).

    ``default``: the sink is fed by every run whose ``[run] sinks`` is not set (installing it turns it on); a run
    that names its sinks gets exactly those, and ``--sink`` adds to either.
    """

    kind: ClassVar[str] = "sink"

    default: bool = False


@dataclass(frozen=True)
class ContextLoaderSpec(Component):
    """A context loader: turns files of some formats into what the REPL gets as ``context`` (text, a JSON value,
    or ``Documents`` with names such as ``report.pdf#p12``).

    ``suffixes`` are the file name endings it claims (``.pdf``, lower case, with the dot); ``mime_types`` the
    media types it claims for a file no suffix claims, recognised by its content (``application/pdf`` for a
    download saved without a suffix); neither means any text file (the built-in fallback). On a suffix or type
    several loaders claim, the highest ``priority`` wins.
    """

    kind: ClassVar[str] = "context_loader"

    suffixes: tuple[str, ...] = ()
    mime_types: tuple[str, ...] = ()
    priority: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "suffixes", tuple(s.lower() for s in self.suffixes))
        object.__setattr__(self, "mime_types", tuple(m.lower() for m in self.mime_types))


class ExporterSpec(Component):
    """A run exporter: ``rlm runs export RUN --format NAME`` writes a saved run tree in another format.

    The factory is called as ``factory(settings, services: HostServices)`` (no settings: exporters have no config
    section) and returns a callable ``write(events, out)`` writing the tree of ``events`` to the text stream ``out``.
    """

    kind: ClassVar[str] = "exporter"


@dataclass(frozen=True)
class ToolboxSpec(Component):
    """A source of functions for the REPL of any run, turned on by a run option (MCP servers: ``mcp_servers``).

    The factory is called as ``factory(None, services: HostServices)`` and returns an object with
    ``check(value, folder)`` (a bad value is a ConfigError, said before the run starts) and ``open(value, folder)``,
    which starts the source for one run tree and returns an object with ``tools`` (``Tool`` s, offered to the root
    run and its child runs), ``notices`` (said at run start) and ``close()``.
    """

    kind: ClassVar[str] = "toolbox"
    option: str = ""  # the run option whose value turns it on


class BenchmarkPackSpec(Component):
    """A benchmark pack: named presets of cases carrying their data and expected answers."""

    kind: ClassVar[str] = "benchmark"


@dataclass(frozen=True)
class ProviderSpec(Component):
    """An LLM provider, addressed in model strings as ``provider:model``.

    ``key_env`` lists the environment variables that may hold its API key (checked, never printed);
    ``key_optional`` says the provider works without one (a local server). ``base_url`` is where it sends
    requests by default (shown by ``rlm models list``; ``base_url_env`` names a variable overriding it), and
    ``example_model`` a model to show in listings and hints. ``model_files`` says the model part may name a file
    the provider reads (a script, a saved run, a weights path): such strings are never taken from model output
    or from an untrusted project file when they point outside it.

    What prices and hints need: ``price_id`` is the provider's id in genai-prices (its list prices and context
    windows; none: not priced from there), ``prices`` the list prices of models genai-prices lacks, as
    ``(model prefix, USD per 1M input tokens, USD per 1M output tokens)``; ``local`` says it runs on this machine
    (a local server, a script, a replay), so its calls cost nothing; ``start_command`` how its server is started
    (said when nothing listens at its URL). Aliases name it in model strings and in ``[[prices]]`` keys too.

    ``sampling`` names the sampling options its API honours (of ``temperature``, ``top_p``, ``seed``): a run that
    sets another is told once that it is not sent.

    ``--model auto`` considers only providers with a ``default_model``, highest ``auto_priority`` first: the
    first one whose key (or base-URL variable) is set, else the first that needs no key and is ready (the
    embedded local model). A user who wants another model names it (``--model``, ``[run] model``,
    ``RLM_RUN__MODEL``): there is no per-provider variable for it.
    """

    kind: ClassVar[str] = "provider"

    key_env: tuple[str, ...] = ()
    key_optional: bool = False
    base_url: str = ""
    base_url_env: str = ""
    example_model: str = ""
    default_model: str = ""  # what ``--model auto`` runs when it picks this provider
    default_notice: str = ""  # said to the user when auto picks it (e.g. "a tiny local model: …")
    auto_priority: int = 0
    model_files: bool = False
    price_id: str = ""
    prices: tuple[tuple[str, float, float], ...] = ()
    local: bool = False
    start_command: str = ""
    sampling: tuple[str, ...] = ("temperature", "top_p", "seed")


@dataclass(frozen=True)
class CommandSpec:
    """A CLI sub-command contributed by a plugin: ``rlm NAME …``.

    ``app`` names a ``typer.Typer`` (a command group), a click command, or a plain function (one command);
    it is imported only when the sub-command runs or its own help is shown.
    """

    name: str
    help: str
    app: LazyRef

    kind: ClassVar[str] = "command"

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise PluginError(f"command name {self.name!r} is not valid")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,)


@dataclass(frozen=True)
class DoctorCheck:
    """A named readiness check a plugin adds to ``rlm plugins doctor`` (e.g. "Docker engine reachable").

    ``check`` is called as ``check(settings)``: the validated section named by ``section`` (``"sandbox.docker"``),
    or the whole ``LoadedSettings`` when ``section`` is empty.
    """

    name: str
    description: str
    check: LazyRef
    section: str = ""

    kind: ClassVar[str] = "check"

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name,)

    def readiness(self, settings: Any = None) -> Readiness:
        return run_check(self.check, f"check {self.name!r}", settings)


class Kind(NamedTuple):
    """One kind of plugin contribution: its registration hook, record type and facade method.

    ``configurable`` kinds have per-component config sections ``[<name>.<component>]``. This table is the one
    source the hook map, the record types, the config sections and ``PluginHost``'s facade derive from. (A
    NamedTuple, not a dataclass: it is built at every ``rlm`` start, and that is seven times cheaper.)
    """

    name: str
    hook: str
    record: type
    plural: str
    configurable: bool = True


KINDS: tuple[Kind, ...] = (
    Kind("environment", "rlm_register_environments", EnvironmentSpec, "environments"),
    Kind("framework", "rlm_register_frameworks", FrameworkSpec, "frameworks"),
    Kind("sandbox", "rlm_register_sandboxes", SandboxSpec, "sandboxes"),
    Kind("sink", "rlm_register_sinks", SinkSpec, "sinks"),
    Kind("context_loader", "rlm_register_context_loaders", ContextLoaderSpec, "context_loaders"),
    Kind("benchmark", "rlm_register_benchmark_packs", BenchmarkPackSpec, "benchmark_packs"),
    Kind("provider", "rlm_register_providers", ProviderSpec, "providers"),
    Kind("exporter", "rlm_register_exporters", ExporterSpec, "exporters", configurable=False),
    Kind("toolbox", "rlm_register_toolboxes", ToolboxSpec, "toolboxes", configurable=False),
    Kind("command", "rlm_register_commands", CommandSpec, "commands", configurable=False),
    Kind("check", "rlm_register_doctor_checks", DoctorCheck, "doctor_checks", configurable=False),
)
KIND_BY_HOOK: dict[str, Kind] = {kind.hook: kind for kind in KINDS}
#: Kinds whose components have config sections, in table order.
COMPONENT_KINDS: tuple[str, ...] = tuple(kind.name for kind in KINDS if kind.configurable)
