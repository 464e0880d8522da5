"""``[environment.harness]``: the harness's limits and the MCP servers whose tools it offers.

A server is configured as Claude Desktop's ``mcpServers`` and VS Code's ``servers`` entries are: ``command``,
``args``, ``env`` (and ``cwd``) for a program speaking MCP on stdin/stdout, or ``url`` and ``headers`` for a
streamable HTTP endpoint. ``load_mcp_config(path)`` reads such a JSON file (``--mcp-config``), either shape.

An untrusted project's ``rlm.toml`` cannot configure servers: the host ignores every key of such a table that
names a program, an endpoint, a credential, an environment or a folder (``rlm config trust`` lifts that). The
``--mcp-config`` file is the user's own choice on the command line, and is trusted as a flag is.

A server's annotations are its own claims: a tool's ``readOnlyHint`` makes it a read (never asked about, allowed
in a ``read-only`` run) only for a server the user marked ``trust_annotations = true``; any other server's tools
are all treated as tools that may change things.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

#: Characters a server's name may hold (it becomes part of its tools' names: ``mcp__<server>__<tool>``).
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


class McpServer(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP)."""

    model_config = ConfigDict(extra="forbid")

    type: Optional[Literal["stdio", "http", "streamable-http", "streamableHttp"]] = Field(
        None, description="stdio or http (inferred from command / url when absent, as Claude Desktop does)")
    command: Optional[str] = Field(None, description="stdio: the program to start (a host program; its cwd is "
                                   "the workdir unless cwd says otherwise)")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments")
    env: dict[str, str] = Field(default_factory=dict, description="stdio: environment variables it gets besides "
                                "PATH, HOME, LANG, USER, SHELL, TERM (nothing else of yours is passed)")
    cwd: Optional[str] = Field(None, description="stdio: its working directory (relative: to the workdir)")
    url: Optional[str] = Field(None, description="http: the streamable HTTP endpoint (…/mcp)")
    headers: dict[str, str] = Field(default_factory=dict, description="http: headers sent with every request "
                                    "(Authorization…)")
    startup_timeout: float = Field(30.0, gt=0, le=600, description="seconds to start, initialize and list tools")
    call_timeout: float = Field(60.0, gt=0, le=3600, description="seconds one tool call may take")
    disabled: bool = Field(False, description="leave this server out")
    trust_annotations: bool = Field(False, description="believe what the server says of its own tools: a tool it "
                                    "marks readOnlyHint then runs unasked in ask and read-only runs (default: every "
                                    "tool of this server is treated as one that may change things)")

    @model_validator(mode="after")
    def _one_transport(self) -> "McpServer":
        if bool(self.command) == bool(self.url):
            raise ValueError("an MCP server needs either 'command' (stdio) or 'url' (streamable HTTP)")
        if self.url and not re.match(r"^https?://", self.url):
            raise ValueError(f"url {self.url!r} must start with http:// or https://")
        if self.type in ("stdio",) and not self.command or self.type in ("http", "streamable-http",
                                                                        "streamableHttp") and not self.url:
            raise ValueError(f"type {self.type!r} does not match the server's command / url")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


class HarnessSettings(BaseModel):
    """``[environment.harness]``."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(6000, ge=200, le=200_000, description="output of one tool shown to the model")
    command_timeout: float = Field(120.0, gt=0, le=3600, description="seconds one run_command may take (in the "
                                   "sandbox; its whole process group is killed after)")
    test_timeout: float = Field(300.0, gt=0, le=3600, description="seconds one run_tests may take")
    search_timeout: float = Field(20.0, gt=0, le=600, description="seconds one regex search may take (a hostile "
                                  "regex is stopped, in the sandbox)")
    history_steps: int = Field(8, ge=1, le=50, description="recent tool calls and results shown in full")
    sandbox_packages: list[str] = Field(default_factory=list, description="what the project's tests need besides "
                                        "pytest: pip requirements added to the sandbox (Docker: `rlm sandbox "
                                        "build-image --with …`)")
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict, description="MCP servers whose tools the "
                                              "model may call, by name (Claude Desktop's mcpServers shape)")

    @model_validator(mode="after")
    def _names(self) -> "HarnessSettings":
        for name in self.mcp_servers:
            if not SERVER_NAME.match(name):
                raise ValueError(f"MCP server name {name!r}: letters, digits, '_' and '-' only (40 at most)")
        return self


def load_mcp_config(path: Path, workdir: Optional[Path] = None) -> dict[str, McpServer]:
    """The servers of a Claude Desktop (``{"mcpServers": {…}}``) or VS Code (``{"servers": {…}}``) JSON file.

    Keys rlm does not use (VS Code's ``inputs``, ``envFile``, ``dev``…) are left out; ``${workspaceFolder}`` is
    the workdir. Raises ValueError with a message naming the problem."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from None
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f"{path} has no 'mcpServers' (Claude Desktop) or 'servers' (VS Code) object")
    known = set(McpServer.model_fields)
    found: dict[str, McpServer] = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: server {name!r} is not an object")
        entry = {k: _expand(v, workdir) for k, v in entry.items() if k in known}
        if entry.get("type") == "sse":
            raise ValueError(f"{path}: server {name!r} uses the old SSE transport; rlm speaks streamable HTTP")
        try:
            found[str(name)] = McpServer.model_validate(entry)
        except ValidationError as exc:
            raise ValueError(f"{path}: server {name!r}: {_first_error(exc)}") from None
    try:
        HarnessSettings(mcp_servers=found)  # the names' rule
    except ValidationError as exc:
        raise ValueError(f"{path}: {_first_error(exc)}") from None
    return found


def _expand(value: Any, workdir: Optional[Path]) -> Any:
    """VS Code's ``${workspaceFolder}`` as the workdir, in strings, lists and string maps."""
    if isinstance(value, str):
        return value.replace("${workspaceFolder}", str(workdir)) if workdir is not None else value
    if isinstance(value, list):
        return [_expand(v, workdir) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, workdir) for k, v in value.items()}
    return value


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error.get("loc", ()) if p != "__root__")
    return f"{where}: {error['msg']}" if where else str(error["msg"])
