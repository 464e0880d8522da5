"""Read settings from their sources and remember where every value came from.

Strongest first: CLI flags, environment variables (``RLM_<SECTION>__<KEY>``, e.g. ``RLM_RUN__MAX_STEPS=4`` or
``RLM_SANDBOX__DOCKER__MEMORY=2g``; ``RLM_HOME`` for ``paths.home``), the project file (``--config FILE``, else
``rlm.toml`` in the current directory, else the ``[tool.rlm]`` table of ``pyproject.toml`` there, as ruff and
pytest read theirs), the user file (``~/.config/rlm/config.toml``), then the defaults.
Every error names the file or variable and the key it came from.
"""

from __future__ import annotations

import contextlib
import json
import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from pydantic import BaseModel, ValidationError

from rlm_host.config.paths import user_config_dir
from rlm_host.components import COMPONENT_KINDS
from rlm_host.config.schema import Settings
from rlm_host import redact
from rlm_host.config.trust import TRUST_ENV, Ignored, holds_credential, is_trusted, screen, warning_text
from rlm_host.errors import ConfigError, RlmError
from rlm_host.text import did_you_mean, is_truthy

if TYPE_CHECKING:
    from rlm_host.plugins.host import PluginHost

PROJECT_FILE = "rlm.toml"
PYPROJECT = "pyproject.toml"  # its [tool.rlm] table, when there is no rlm.toml
ENV_PREFIX = "RLM_"
DEFAULT = "default"

#: Top-level tables a file may hold that are run options: ``[mcp_servers.NAME]``, as Claude Desktop names them.
TOP_LEVEL_ALIASES = {"mcp_servers": "run.mcp_servers"}
Entry = tuple[str, Any, str]  # (dotted key, value, source label)
_WARNED: set[str] = set()  # untrusted-config warnings already given in this process


@dataclass
class LoadedSettings:
    """Validated settings plus the source of each value and the validated component sections."""

    settings: Settings
    sources: dict[str, str]
    files: list[Path] = field(default_factory=list)
    components: dict[tuple[str, str], BaseModel] = field(default_factory=dict)
    untrusted_file: Path | None = None  # a project file not (yet) trusted: see rlm_host.config.trust
    ignored: list[Ignored] = field(default_factory=list)  # its settings left out for that reason

    def warn_untrusted(self) -> None:
        """Say once per process which settings of an untrusted project file were ignored, and how to trust it."""
        text = warning_text(self.untrusted_file, self.ignored) if self.ignored and self.untrusted_file else ""
        if not text or text in _WARNED:
            return
        _WARNED.add(text)
        from rlm_host import logs

        logs.say(text, event="untrusted config", level="warning", file=str(self.untrusted_file),
                 ignored=[item.key for item in self.ignored])

    @property
    def home(self) -> Path:
        """The run home (``[paths] home``, ``$RLM_HOME``), with ``~`` expanded."""
        return self.settings.paths.home

    def source_of(self, dotted_key: str) -> str:
        """Where a value came from: the longest configured prefix of the key, else "default"."""
        return _source_for(dotted_key, self.sources)

    def rows(self, *, all_components: bool = False) -> list[tuple[str, Any, str]]:
        """(key, value, source) for every leaf of the effective settings, for ``rlm config show``.

        Component sections appear when configured; ``all_components`` adds every component's defaults. A documented
        key whose value is empty (``run.labels = {}``) is shown like any other; only a component kind with no
        section configured (``sandbox = {}``) is left out.
        """
        data = self.settings.model_dump(mode="json")
        for (kind, name), model in self.components.items():
            if all_components or self.source_of(f"{kind}.{name}") != DEFAULT:
                data.setdefault(kind, {})[name] = model.model_dump(mode="json")
        return [(key, value, self.source_of(key)) for key, value in _flatten(data)
                if not (value == {} and key in COMPONENT_KINDS)]

    def with_run(self, values: dict[str, Any], labels: dict[str, str] | None = None) -> "LoadedSettings":
        """These settings with ``[run]`` values a front door was given (None: not given), validated once; each
        is recorded with its label (``--max-steps``, ``RLM(max_steps=…)``) for ``source_of`` and errors."""
        from rlm_host.config.run_options import merge_run

        run = merge_run(self.settings.run, values, labels)
        if run is self.settings.run:
            return self
        given = [name for name, value in values.items() if value is not None]
        sources = {**self.sources, **{f"run.{name}": (labels or {}).get(name, name) for name in given}}
        return replace(self, settings=self.settings.model_copy(update={"run": run}), sources=sources)

    def with_component(self, kind: str, name: str, settings: BaseModel) -> "LoadedSettings":
        """These settings with ``[<kind>.<name>]`` replaced by ``settings`` (validated: a front door's own flags,
        such as ``rlm harness run --mcp-config``)."""
        return replace(self, components={**self.components, (kind, name): settings})

    def component(self, kind: str, name: str) -> BaseModel | None:
        """The validated section ``[<kind>.<name>]`` (defaults when absent), or None if it takes no settings."""
        return self.components.get((kind, name))


def load_settings(
    *,
    overrides: dict[str, tuple[Any, str]] | None = None,
    config_file: Path | None = None,
    environ: dict[str, str] | None = None,
    cwd: Path | None = None,
    host: "PluginHost | None" = None,
    trust: bool = False,
) -> LoadedSettings:
    """Merge every source, validate, and (given a plugin host) validate the component sections too.

    ``overrides`` maps dotted keys to ``(value, flag label)`` from the command line. A project file found in
    ``cwd`` is screened unless trusted (``trust``, ``RLM_TRUST_CONFIG``, or ``rlm config trust``): its settings
    that move secrets or weaken isolation are left out and listed in ``ignored`` (see ``warn_untrusted``).
    """
    env = dict(os.environ if environ is None else environ)
    here = Path.cwd() if cwd is None else cwd
    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"config file not found: {config_file}")
    user_file = user_config_dir(env) / "config.toml"
    project = config_file or find_project_file(here)
    files = [path for path in (user_file, project) if path is not None and path.is_file()]
    entries: list[Entry] = []
    untrusted: Path | None = None
    ignored: list[Ignored] = []
    for path in files:  # weakest first; only a project file found in ``cwd`` is screened
        table = project_table(path)
        label = "user file" if path is user_file else "config file" if config_file else "project file"
        found = [(key, value, f"{label} {path}") for key, value in _flatten(table)]
        if label == "project file" and not (trust or is_truthy(env.get(TRUST_ENV)) or is_trusted(path, table, env)):
            found, ignored = screen(found, here, host, baseline={key: value for key, value, _ in entries})
            untrusted = path.resolve() if ignored else None
        entries += found
    entries += _env_entries(env) + [(key, value, label) for key, (value, label) in (overrides or {}).items()
                                    if value is not None]
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key, value, label in entries:
        if isinstance(value, str):  # a configured key or URL password is never printed or recorded
            redact.register_url(value)
            if holds_credential(key) and key.endswith("_env"):  # api_key_env = "MY_VAR": MY_VAR's value
                redact.register(env.get(value))
            elif holds_credential(key):
                redact.register(value.removeprefix("Bearer ").removeprefix("Basic "), value)
        _set_dotted(merged, key, value)
        sources = {k: v for k, v in sources.items() if not k.startswith(key + ".")}
        sources[key] = label
    for item in ignored:  # an ignored key's section still names a component: a misspelt one is still an error
        kind, _, rest = item.key.partition(".")
        if kind in COMPONENT_KINDS and rest:
            name = rest.split(".")[0]
            if isinstance(merged.setdefault(kind, {}), dict) and name not in merged[kind]:
                merged[kind][name] = {}
                sources.setdefault(f"{kind}.{name}", f"project file {untrusted}")

    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, sources, Settings, host=host)) from None
    loaded = LoadedSettings(settings, sources, files, untrusted_file=untrusted, ignored=ignored)
    if host is not None:
        _validate_components(loaded, host)
    return loaded


def _validate_components(loaded: LoadedSettings, host: "PluginHost") -> None:
    """Validate each ``[<kind>.<name>]`` with its component's model; fill in defaults for the rest."""
    for kind, registry in host.component_registries().items():  # COMPONENT_KINDS
        sections: dict[str, dict[str, Any]] = getattr(loaded.settings, kind)
        # "test_box" (from RLM_SANDBOX__TEST_BOX__…) and "test-box" (from a file) are one section; sources
        # were merged weakest first, so later spellings win.
        by_spec: dict[str, tuple[Any, dict[str, Any], str, str]] = {}
        for name, values in sections.items():
            where = loaded.source_of(f"{kind}.{name}")
            try:
                spec = registry.get(name)
            except RlmError as exc:
                raise ConfigError(f"{where}: [{kind}.{name}]: {exc}", hint=exc.hint) from None
            by_spec.setdefault(spec.name, (spec, {}, name, where))[1].update(values)
        for spec_name, (spec, values, name, where) in by_spec.items():
            model = spec.settings_model()
            if model is None:
                raise ConfigError(f"{where}: [{kind}.{name}]: this {kind} takes no settings")
            try:
                loaded.components[(kind, spec_name)] = model.model_validate(values)
            except ValidationError as exc:
                raise ConfigError(_describe(exc, loaded.sources, model, prefix=f"{kind}.{name}")) from None
        for spec in registry:
            if (kind, spec.name) not in loaded.components and spec.settings is not None:
                with contextlib.suppress(Exception):  # a broken settings model is reported by the doctor, not here
                    loaded.components[(kind, spec.name)] = spec.settings_model()()


def _describe(exc: ValidationError, sources: dict[str, str], model: type[BaseModel], prefix: str = "",
              host: "PluginHost | None" = None) -> str:
    """One line per problem: where it came from, the key, and what is wrong."""
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        key = ".".join(filter(None, [prefix, *loc]))
        where = _source_for(key, sources)
        moved = _moved(model, loc, host) if error["type"] == "extra_forbidden" else ""
        if moved:
            problem = moved
        elif error["type"] == "extra_forbidden":
            known = sorted(getattr(_model_at(model, loc[:-1]), "model_fields", None) or [])
            suggestion = did_you_mean(loc[-1], known)
            problem = "unknown key" + suggestion
            if known and not suggestion:
                problem += "; known keys: " + ", ".join(known)
        else:
            problem = error["msg"]
            if "input" in error and not isinstance(error["input"], dict):
                problem += f" (got {error['input']!r})"
        lines.append(f"{where}: {key}: {problem}")
    return "; ".join(lines)


def _model_at(model: type[BaseModel], path: list[str]) -> Any:
    """The model of the section at ``path`` inside ``model`` (None when there is none)."""
    current: Any = model
    for part in path:
        fields = getattr(current, "model_fields", None)
        if not fields or part not in fields:
            return None
        current = fields[part].annotation
    return current


def _moved(model: type[BaseModel], loc: list[str], host: "PluginHost | None") -> str:
    """For a key a section that gives up keys to components (one with ``MOVED``, like ``[rewards]``) no longer
    holds: where it is set now, the sections of the registered components whose settings declare it (by its new
    name when ``MOVED`` renames it). Empty for any other unknown key."""
    section = _model_at(model, loc[:-1])
    renames = getattr(section, "MOVED", None)
    if renames is None or not loc:
        return ""
    name = renames.get(loc[-1], loc[-1])
    places = []
    for kind, registry in (host.component_registries().items() if host is not None else ()):
        for spec in registry:
            with contextlib.suppress(Exception):  # a broken settings model is the doctor's to report
                if spec.settings is not None and name in spec.settings_model().model_fields:
                    places.append(f"[{kind}.{spec.name}]")
    if len(places) == 1:
        return f"moved to {places[0]} {name}"
    if places:
        return f"moved to the settings of each component that uses it: {name} in " + ", ".join(places)
    return f"moved to the settings of the component that uses it: {name}" if name != loc[-1] else ""


def _source_for(key: str, sources: dict[str, str]) -> str:
    """The label of the longest configured prefix of ``key``; for a section, the source of a key inside it."""
    parts = key.split(".")
    found = next((label for end in range(len(parts), 0, -1) if (label := sources.get(".".join(parts[:end])))), None)
    return found or min((label for name, label in sources.items() if name.startswith(key + ".")), default=DEFAULT)


def find_project_file(folder: Path) -> Path | None:
    """The project file of ``folder``: its ``rlm.toml``, else a ``pyproject.toml`` with a ``[tool.rlm]`` table."""
    if (folder / PROJECT_FILE).is_file():
        return folder / PROJECT_FILE
    pyproject = folder / PYPROJECT
    return pyproject if pyproject.is_file() and project_table(pyproject) else None


def project_table(path: Path) -> dict[str, Any]:
    """The settings a project file holds: all of an ``rlm.toml``, the ``[tool.rlm]`` table of a pyproject.toml."""
    data = _read_toml(path)
    if path.name != PYPROJECT:
        return data
    table = data.get("tool", {}).get("rlm", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.rlm] must be a table")
    return table


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None


def _env_entries(env: dict[str, str]) -> list[Entry]:
    entries: list[Entry] = []
    if env.get("RLM_HOME"):
        entries.append(("paths.home", env["RLM_HOME"], "env RLM_HOME"))
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        key = ".".join(part.lower() for part in name[len(ENV_PREFIX):].split("__"))
        value: Any = env[name]
        if value[:1] in "[{":  # lists and tables may be given as JSON; the rest stays a string for pydantic
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        entries.append((key, value, f"env {name}"))
    return entries


def _flatten(data: dict[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else TOP_LEVEL_ALIASES.get(str(key), str(key))
        if isinstance(value, dict) and value:
            yield from _flatten(value, dotted)
        else:
            yield dotted, value


def _set_dotted(target: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        if not isinstance(target.get(part), dict):
            target[part] = {}
        target = target[part]
    target[leaf] = value
