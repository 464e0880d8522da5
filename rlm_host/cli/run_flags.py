"""The run options as command-line flags, derived from ``RunSettings`` (their one declaration).

``rlm run`` offers every run option; other commands (``rlm chat``, ``rlm bench run``) offer the ones they take
with :func:`options`, and turn what the user gave into settings with :func:`apply`, which records each flag as
the value's source. A list option (``--sink``, ``--allow-sub-model``) and a pairs option (``--label``,
``--approval-rule``) add to the configured
values (``--sink`` with ``[run] sinks`` not set: to the sinks that are on by default); every other flag replaces
its setting.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, Iterable, Optional


from typer.core import TyperOption

from rlm_host.config import run_options
from rlm_host.errors import ConfigError, InputError
from rlm_host.text import did_you_mean


#: List options whose flag adds to the configured values rather than replacing them.
ADDING_LISTS = ("sinks", "allowed_sub_models", "tools", "sub_tools")


def _field_type(name: str) -> tuple[Any, bool, bool, Optional[str]]:
    """(click type, is a flag, repeatable, metavar) of a run option, from its annotation; pydantic validates the
    value (a choice, a path) when the settings are merged, so its error names the flag."""
    from rlm_host.config.schema import RunSettings

    annotation: Any = RunSettings.model_fields[name].annotation  # a class or a typing form (Optional, Literal…)
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    optional = typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1
    base = args[0] if optional else annotation
    origin = typing.get_origin(base)
    if origin is dict:
        return str, False, True, "KEY=VALUE"
    if origin is list:
        return str, False, True, "TEXT"
    if origin is typing.Literal:
        return str, False, False, "[" + "|".join(str(value) for value in typing.get_args(base)) + "]"
    if base is bool:
        return bool, True, False, None
    if base is Path:
        return str, False, False, "DIR"
    kind = {int: int, float: float}.get(base, str)
    return kind, False, False, {int: "INTEGER", float: "SECONDS" if "seconds" in name or "timeout" in name
                                else "FLOAT"}.get(kind, "TEXT")


def options(names: Optional[Iterable[str]] = None) -> list[TyperOption]:
    """Click options for the run options ``names`` (default: all), each named by ``run_options.flag_of``, typed and
    documented by its field; unset flags are None, so the configured value applies."""
    out = []
    for name in names or run_options.names():
        kind, is_flag, repeat, metavar = _field_type(name)
        decls, help_text = _flag(name)
        out.append(TyperOption(param_decls=[*decls, name], is_flag=is_flag, type=None if is_flag else kind,
                               multiple=repeat, default=None, help=help_text, metavar=metavar))
    return out


def _flag(name: str) -> tuple[list[str], str]:
    """A run option's flag (a bool one with its ``--no-…`` form) and its help, from its declaration."""
    from rlm_host.config.schema import RunSettings

    flag = run_options.flag_of(name)
    description = RunSettings.model_fields[name].description or ""
    text = description[:1].upper() + description[1:]
    if name in ADDING_LISTS or _field_type(name)[3] == "KEY=VALUE":
        text += " (repeat; adds to [run] " + name + ")"
    return [f"{flag}/--no-{flag[2:]}"] if _field_type(name)[1] else [flag], text + "."


def apply(loaded: Any, given: dict[str, Any]) -> Any:
    """``loaded`` with the run options of ``given`` (click's parsed values; None or empty: not given) set, each
    recorded as coming from its flag; a bad value is a ConfigError naming the flag, and so is a name that is no run
    option (a front door passing what its user typed: the TUI's ``budget=``)."""
    run = loaded.settings.run
    values: dict[str, Any] = {}
    if (unknown := next((name for name in given if name not in run_options.names()), None)) is not None:
        # one clear error, with the nearest options (``--max-cost`` for ``cost``)
        flag = "--" + unknown.replace("_", "-")
        near = did_you_mean(flag, [run_options.flag_of(n) for n in run_options.names()], n=3, cutoff=0.5, show=str)
        raise ConfigError(f"unknown run option {flag}{near}",
                          hint="the run options are those of `rlm run --help` (--max-cost and --max-tokens for a "
                          "budget)")
    for name, value in given.items():
        if value is None or value == ():
            continue
        if _field_type(name)[3] == "KEY=VALUE":  # --label, --approval-rule: pairs added to the configured ones
            values[name] = {**getattr(run, name), **_pairs(run_options.flag_of(name), value)}
        elif name in ADDING_LISTS:
            added = [part.strip() for item in value for part in str(item).split(",") if part.strip()]
            values[name] = list(dict.fromkeys([*_configured(run, name), *added]))
        else:
            values[name] = value
    return loaded.with_run(values, {name: run_options.flag_of(name) for name in values})


def _configured(run: Any, name: str) -> list[str]:
    """The configured values a list flag adds to; for ``sinks`` not set, the sinks that are on by default (so
    ``--sink otel`` feeds ``otel`` besides them, as it would beside a configured list); ``sub_tools`` not set: none."""
    if name == "sinks" and run.sinks is None:
        from rlm_host.engine.plan import run_sinks
        from rlm_host.plugins import get_host

        return run_sinks(get_host(), None)
    return list(getattr(run, name) or [])


def _pairs(flag: str, items: Iterable[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            example = "experiment=chunking" if flag == "--label" else "run_command=ask"
            raise InputError(f"{flag} {item!r} is not KEY=VALUE", hint=f"e.g. {flag} {example}")
        pairs[key.strip()] = value
    return pairs


def run_option(name: str) -> Any:
    """``typer.Option`` of one run option for a typer command (``rlm bench run``, ``rlm mcp serve``): its flag and
    help from the declaration, default None (the configured value). The parameter's annotation is the command's own;
    ``tests/test_run_options.py`` checks it matches the field."""
    import typer

    decls, help_text = _flag(name)
    return typer.Option(None, *decls, help=help_text, metavar=_field_type(name)[3])
