"""MCP servers' tools as functions in the REPL of any run (``[mcp_servers.NAME]``, ``--mcp-config FILE``).

The harness's MCP client (``McpPool``) is started once per run tree. Each tool of each server becomes a function
named ``mcp__<server>__<tool>`` (a ``-`` written ``_``) whose parameters are its input schema's properties, the
required ones first; the host calls it through the run's tool bridge, so approvals, the tool timeout and the
``tool_call`` record apply as to the user's own ``--tool`` functions. The result is the tool's structured content
(JSON data; a lone ``{"result": value}``, how the SDK wraps a plain value, as the value) when it gives one,
else its text; a failed call (the tool's error, a timeout, a server that stopped)
raises ``McpToolError`` in the model's code. A server that does not start is one notice, and its tools are absent.

Servers are the ones a harness run takes (``rlm_harness.settings.McpServer``): a program speaking MCP on stdio,
started in the run's folder with none of your environment but the variables its ``env`` names, or a streamable
HTTP endpoint. An untrusted project's ``rlm.toml`` cannot name one (the host's trust rules ignore it).
"""

from __future__ import annotations

import inspect
import keyword
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from rlm_host import ConfigError
from rlm_host.sdk.environments import Tool

from rlm_harness.mcp_client import McpPool, McpTool
from rlm_harness.settings import HarnessSettings, McpServer, _first_error, load_mcp_config

#: JSON Schema types as the Python types the prompt shows.
_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}


class McpToolError(RuntimeError):
    """An MCP tool's call failed: the server's error, a timeout, or a server no longer there."""


class McpToolbox:
    """The ``mcp`` toolbox: ``check`` reads the servers of the run option ``mcp_servers``; ``open`` starts them."""

    def __init__(self, settings: Any = None, services: Any = None) -> None:
        self.services = services

    def check(self, value: Any, folder: Path) -> None:
        servers_of(value, folder)

    def open(self, value: Any, folder: Path) -> "OpenToolbox":
        pool = McpPool(servers_of(value, folder), folder)
        try:
            pool.start()
        except BaseException:
            pool.close()
            raise
        return OpenToolbox(pool)


class OpenToolbox:
    """The servers of one run tree: their tools as ``Tool`` s, a notice per server, ``close()`` stops them."""

    def __init__(self, pool: McpPool) -> None:
        self.pool = pool
        self.tools = tuple(_tool(pool, tool) for tool in pool.tools)
        self.notices = [_notice(row) for row in pool.status()]

    def close(self) -> None:
        self.pool.close()


def servers_of(value: Any, folder: Path) -> dict[str, McpServer]:
    """The servers a run option names: a JSON file (Claude Desktop's ``mcpServers`` or VS Code's ``servers``), or
    a table of servers by name (either file shape as a dict too); a server marked ``disabled`` is left out. Any
    problem is a ConfigError naming the server."""
    if isinstance(value, (str, Path)):
        path = Path(value).expanduser()
        try:
            return load_mcp_config(path if path.is_absolute() else Path.cwd() / path, folder)
        except ValueError as exc:
            raise ConfigError(f"mcp_servers: {exc}", hint="a JSON file like Claude Desktop's: "
                              '{"mcpServers": {"NAME": {"command": "…", "args": ["…"]}}}') from None
    if not isinstance(value, dict):
        raise ConfigError(f"mcp_servers: expected a JSON file or a table of servers, not {type(value).__name__}")
    for shape in ("mcpServers", "servers"):
        if isinstance(value.get(shape), dict):
            value = value[shape]
    found: dict[str, McpServer] = {}
    for name, entry in value.items():
        if not isinstance(entry, dict):
            raise ConfigError(f"mcp_servers: server {name!r} is not a table (command, args, env or url, headers)")
        if entry.get("disabled") is True:
            continue
        try:
            found[str(name)] = McpServer.model_validate(entry)
        except ValidationError as exc:
            raise ConfigError(f"mcp_servers: server {name!r}: {_first_error(exc)}") from None
    try:
        HarnessSettings(mcp_servers=found)  # the rule for server names
    except ValidationError as exc:
        raise ConfigError(f"mcp_servers: {_first_error(exc)}") from None
    return found


def _tool(pool: McpPool, tool: McpTool) -> Tool:
    name = tool.name.replace("-", "_")
    function = _function(pool, tool, name)
    summary = tool.description.strip().splitlines()[0][:200] if tool.description.strip() else ""
    return Tool(name, function, str(inspect.signature(function)), summary, f"mcp:{tool.server}/{tool.tool}",
                kind=tool.kind)


def _function(pool: McpPool, tool: McpTool, name: str) -> Callable[..., Any]:
    """A host function calling ``tool`` with keyword arguments, its signature taken from the input schema."""
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    properties = got if isinstance(got := schema.get("properties"), dict) else {}
    required = [key for key in schema.get("required") or [] if key in properties]

    def call(*args: Any, **kwargs: Any) -> Any:
        if args:
            raise TypeError(f"{name} takes its arguments by name ({', '.join(properties) or 'none'})")
        arguments = {key: item for key, item in kwargs.items() if item is not None or key in required}
        observation = pool.call(tool.name, arguments)
        if not observation.get("success"):
            raise McpToolError(str(observation.get("error") or "the tool failed"))
        structured = observation.get("structured")
        if isinstance(structured, dict) and list(structured) == ["result"]:
            return structured["result"]  # the SDK's wrapping of a tool that returns a plain value
        return observation.get("content", "") if structured is None else structured

    call.__name__ = name
    call.__doc__ = tool.description or f"The {tool.tool!r} tool of the MCP server {tool.server!r}."
    if all(key.isidentifier() and not keyword.iskeyword(key) and not key.startswith("_") for key in properties):
        ordered = required + [key for key in properties if key not in required]
        call.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
            inspect.Parameter(key, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=_type(properties[key]),
                              default=inspect.Parameter.empty if key in required else None)
            for key in ordered
        ])
    else:  # names no Python parameter can take: the tool's arguments are given by name, as keywords
        call.__signature__ = inspect.Signature([inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])  # type: ignore[attr-defined]
    return call


def _type(schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return _TYPES.get(kind, inspect.Parameter.empty) if isinstance(kind, str) else inspect.Parameter.empty


def _notice(row: dict[str, Any]) -> str:
    if row.get("error"):
        return f"MCP server {row['server']!r} is not available: {row['error']}"
    names = [name.replace("-", "_") for name in row.get("tools") or []]
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    note = f" ({row['note']})" if row.get("note") else ""
    return f"MCP server {row['server']!r}: {len(names)} tool(s) in the REPL: {shown or 'none'}{note}"
