"""The run options, derived from their one declaration (``RunSettings``) for every front door.

``rlm run`` flags, ``RLM(...)`` keyword arguments, ``rlm bench`` flags and the MCP tool's input schema all take
their names, types, limits and help from the ``RunSettings`` fields, so they cannot drift apart; a value given
at a front door is merged with :func:`merge_run`, which records the label it came from (``--max-steps``,
``RLM(max_steps=…)``) so the run record (``settings_sources`` in ``run_start``) and every error name it.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import Field, ValidationError

from rlm_host.config.schema import RunSettings, problems
from rlm_host.errors import ConfigError


def names() -> tuple[str, ...]:
    """Every run option, in declaration order."""
    return tuple(RunSettings.model_fields)


def flag_of(name: str) -> str:
    """The command-line flag of a run option: its declared ``flag`` (``environment`` → ``--env``), else the name
    with dashes (``max_steps`` → ``--max-steps``)."""
    extra = RunSettings.model_fields[name].json_schema_extra
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return str(flag) if flag else "--" + name.replace("_", "-")


def keyword_label(name: str) -> str:
    """How an API caller's value is named in provenance and errors."""
    return f"RLM({name}=…)"


def merge_run(base: RunSettings, values: dict[str, Any], labels: Optional[dict[str, str]] = None) -> RunSettings:
    """``base`` with ``values`` (None: not given) set, validated once; an unknown name is a TypeError (a
    programming error), a bad value a ConfigError naming where it came from (``--max-steps: …``)."""
    given = {name: value for name, value in values.items() if value is not None}
    unknown = sorted(set(given) - set(RunSettings.model_fields))
    if unknown:
        raise TypeError(f"unknown run option(s): {', '.join(unknown)} (run options: {', '.join(names())})")
    if not given:
        return base
    try:
        return RunSettings.model_validate({**base.model_dump(), **given}, context={"given": set(given)})
    except ValidationError as exc:
        raise ConfigError(f"invalid run option: {problems(exc, 'run', labels)}") from None


def run_option_type(name: str) -> Any:
    """The type of a run option for a front door that builds a schema from annotations (the MCP tool, through
    pydantic): optional (None: the configured value), with the field's limits and description."""
    field = RunSettings.model_fields[name]
    inner = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
    return Annotated[Optional[inner], Field(description=field.description or name)]
