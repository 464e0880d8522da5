"""Typed answers: ``RLM(output_type=Model)`` or ``rlm run --output-schema schema.json``.

The run's final answer must be JSON that matches the type: a pydantic model, a dataclass (any type pydantic can
validate) or a JSON Schema (a dict, or a file). The prompt states the schema; a ``FINAL`` / ``FINAL_VAR`` /
``SUBMIT`` value that does not match is sent back to the model with the validation errors as that step's
observation, and the run goes on within its limits; ``RunResult.output`` holds the validated object.
"""

from __future__ import annotations

import json
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from rlm_host.context import read_regular
from rlm_host.errors import ConfigError

__all__ = ["OutputInvalid", "OutputType", "output_type_of"]

#: The largest schema file read, and how much of a schema the prompt shows.
MAX_SCHEMA_BYTES = 1024 * 1024
PROMPT_SCHEMA_CHARS = 6000


class OutputInvalid(ValueError):
    """A final value that does not match the run's output type; the message lists the problems, one a line."""


@dataclass(eq=False)  # compared and hashed by identity (its schema, a dict, is not hashable)
class OutputType:
    """The type a run's answer must have: its JSON Schema (for the prompt) and a validator (value → object);
    ``python_type`` is the type given (None for a JSON Schema), for a framework whose structured output takes one."""

    schema: dict[str, Any]
    validate: Callable[[Any], Any]
    name: str
    python_type: Any = None

    def parse(self, value: Any) -> Any:
        """The validated object for a final value (a JSON text is read first); OutputInvalid when it does not match."""
        if isinstance(value, str):
            with suppress(ValueError):  # plain text stays text: valid only for a string schema
                value = json.loads(value)
        return self.validate(value)

    def prompt(self, how: str = "") -> str:
        """What the model is told about the answer's shape: the schema, how to give the answer (``how``, an agent
        framework's words; by default the REPL's ``FINAL_VAR`` / ``FINAL``), and that a mismatch comes back."""
        schema = json.dumps(self.schema, ensure_ascii=False)
        if len(schema) > PROMPT_SCHEMA_CHARS:
            schema = schema[:PROMPT_SCHEMA_CHARS] + " … (cut)"
        how = f"{how} (the JSON value itself, not text about it)." if how else \
            "Build it as a Python dict or list in the REPL and give it with FINAL_VAR(name) (or FINAL(value) in code)."
        return (f"Your final answer must be JSON matching this JSON Schema ({self.name}): {schema}\n"
                f"{how} An answer that does not match is sent back to you with the errors.")


def output_type_of(given: Any, *, where: str = "output_type", folder: Optional[Path] = None) -> Optional[OutputType]:
    """The ``OutputType`` of what the user gave: None, a JSON Schema dict, the path of a JSON Schema file, or a type
    pydantic validates (a BaseModel, a dataclass, ``list[int]``…). Anything else, an unreadable file or a schema that
    is not valid JSON Schema is one ConfigError naming ``where`` (exit 2, before the run)."""
    if given is None:
        return None
    if isinstance(given, (str, Path)):
        return _from_schema(_read_schema(Path(given), where, folder), where, name=Path(given).name)
    if isinstance(given, dict):
        return _from_schema(given, where, name="the given schema")
    return _from_type(given, where)


def _read_schema(path: Path, where: str, folder: Optional[Path]) -> Any:
    full = path.expanduser() if path.expanduser().is_absolute() or folder is None else folder / path
    try:
        data = read_regular(full, MAX_SCHEMA_BYTES, follow_links=True)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the schema {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise ConfigError(f"{where}: {path} is not JSON: {exc}") from None


def _from_schema(schema: Any, where: str, *, name: str) -> OutputType:
    import jsonschema

    if not isinstance(schema, dict):
        raise ConfigError(f"{where}: a JSON Schema is an object, not {type(schema).__name__}")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(str(part) for part in exc.path) or "the top level"
        raise ConfigError(f"{where}: not a valid JSON Schema ({at}: {exc.message})") from None
    validator = cls(schema)

    def validate(data: Any) -> Any:
        problems = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if problems:
            raise OutputInvalid("\n".join(f"{'/'.join(map(str, e.absolute_path)) or '(the answer)'}: {e.message}"
                                          for e in problems[:20]))
        return data

    return OutputType(schema, validate, name)


def _from_type(given: Any, where: str) -> OutputType:
    from pydantic import TypeAdapter, ValidationError

    from rlm_host.config.schema import problems

    try:
        adapter = TypeAdapter(given)
        schema = adapter.json_schema()
    except Exception as exc:  # noqa: BLE001 - pydantic's many ways of saying a type is not one it handles
        raise ConfigError(f"{where}: {given!r} is not a type an answer can be validated as ({exc})") from None

    def validate(data: Any) -> Any:
        try:
            return adapter.validate_python(data)
        except ValidationError as exc:
            raise OutputInvalid(problems(exc, "(the answer)", sep="\n", most=20)) from None

    return OutputType(schema, validate, getattr(given, "__name__", None) or str(given), python_type=given)
