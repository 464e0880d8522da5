"""``rlm harness run TASK --workdir DIR``: the harness environment over a project folder — ``rlm run``'s own command
(``run_command``: every run option, the live view, the exit codes) with the environment set; ``rlm harness
tools``: the tools a run would offer (built-in, and each MCP server's, or why it is not available).

Both take the run's MCP servers (``--mcp-config FILE``: a Claude Desktop or VS Code JSON file, the user's own
choice and so trusted as a flag is; ``[mcp_servers.NAME]``) as the harness's own, beside ``[environment.harness]
mcp_servers``: their tools are actions of its tool protocol. What ``tools`` prints for a person goes through
``_out``, which shows control characters (C0, DEL, C1) instead of sending them (the servers' text is hostile)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rlm_host.sdk.commands import run_command as run_command_of
from rlm_host.sdk.commands import terminal_safe
from typer.core import TyperOption

app = typer.Typer(help="A coding agent over a project folder with MCP tools and approvals.", rich_markup_mode=None,
                  add_completion=False, no_args_is_help=True)


@app.callback()
def harness() -> None:
    """A coding agent over a project folder: files, search, commands and tests in the sandbox, MCP tools."""


def _with_mcp_servers(loaded: Any, extras: dict[str, Any]) -> Any:
    """The run's MCP servers (``--mcp-config FILE``, ``[mcp_servers.NAME]``) as the harness's own, whose tools are
    actions of its tool protocol (``mcp__SERVER__TOOL``), so the run does not also start them as REPL functions."""
    from rlm_host import ConfigError

    from rlm_harness.settings import HarnessSettings
    from rlm_harness.toolbox import servers_of

    value = extras.get("mcp_config") or loaded.settings.run.mcp_servers
    if not value:
        return loaded
    workdir = extras.get("workdir") or loaded.settings.run.workdir or Path.cwd()
    try:
        servers = servers_of(str(value) if isinstance(value, Path) else value, Path(workdir).resolve())
    except ConfigError as exc:
        raise ConfigError(exc.message.replace("mcp_servers:", "--mcp-config:", 1), hint=exc.hint) from None
    current = loaded.component("environment", "harness") or HarnessSettings()
    merged = current.model_copy(update={"mcp_servers": {**current.mcp_servers, **servers}})
    return loaded.with_component("environment", "harness", merged).with_run({"mcp_servers": {}},
                                                                            {"mcp_servers": "rlm harness run"})


#: ``rlm harness run``: ``rlm run``'s command (every run option, the live view, the exit codes) in the harness.
run_command = run_command_of(
    "run", defaults={"environment": "harness"}, exclude=("environment", "framework", "mcp_servers"), context=False,
    params=(TyperOption(param_decls=["--mcp-config", "mcp_config"], type=Path, default=None, metavar="FILE",
                        help="A Claude Desktop / VS Code JSON file of MCP servers ({\"mcpServers\": {…}} or "
                        "{\"servers\": {…}}): their tools are the model's, next to the built-in ones."),),
    prepare=_with_mcp_servers,
    help="Work on TASK in the project folder (--workdir): read, search, edit, run commands and tests in the "
    "sandbox, MCP tools. Writes, commands and MCP tools that are not read-only follow --approve (auto, ask: y/N on "
    "this terminal, read-only: refused, the model is told). Exit 0 answered, 1 no final answer, 3 answered with an "
    "incomplete record, 130 interrupted, 2 bad input or a sandbox that is not ready: in Docker, a missing image with "
    "pytest is built first when [sandbox.docker] "
    "build_missing allows (on a terminal: asked), else the run does not start.",
)


@app.command("tools")
def list_tools(
    ctx: typer.Context,
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="The folder stdio servers start in (default: "
                                           "the current directory)."),
    mcp_config: Optional[Path] = typer.Option(None, "--mcp-config", help="A Claude Desktop / VS Code JSON file "
                                              "of MCP servers."),
    as_json: bool = typer.Option(False, "--json", help="Print the tools as JSON."),
) -> None:
    """List the tools a harness run would offer: the built-in ones and each MCP server's (servers are started,
    asked for their tools and stopped), or why a server is not available."""
    from rlm_harness.mcp_client import McpPool
    from rlm_harness.settings import HarnessSettings
    from rlm_harness.tools import BUILTIN_TOOLS, KINDS

    from rlm_host import CommandServices

    loaded = _with_mcp_servers(CommandServices.of(ctx).settings, {"mcp_config": mcp_config, "workdir": workdir})
    settings = loaded.component("environment", "harness") or HarnessSettings()
    folder = (workdir or Path.cwd()).resolve()
    with McpPool(settings.mcp_servers, folder) as pool:
        builtin = [{"name": t.name, "kind": KINDS.get(t.name, "read"), "description": t.description}
                   for t in BUILTIN_TOOLS]
        mcp = [{"name": t.name, "server": t.server, "kind": t.kind, "read_only": t.read_only,
                "destructive": t.destructive, "description": t.description, "input_schema": t.input_schema}
               for t in pool.tools]
        servers = pool.status()
    if as_json:
        typer.echo(json.dumps({"builtin": builtin, "mcp": mcp, "servers": servers}, indent=2))
        return
    _out("built-in tools:")
    for tool in builtin:
        _out(f"  {tool['name']:<16} {tool['kind']:<8} {tool['description']}")
    if not servers:
        _out("MCP servers: none configured ([environment.harness.mcp_servers.NAME] or --mcp-config)")
    for server in servers:
        if server["error"]:
            _out(f"MCP server {server['server']} ({server['transport']}): NOT AVAILABLE: {server['error']}")
            continue
        _out(f"MCP server {server['server']} ({server['transport']}, started in {server['startup_s']:.2f} s):")
        for listed in (t for t in mcp if t["server"] == server["server"]):
            _out(f"  {listed['name']:<36} {listed['kind']:<5} {_first_line(str(listed['description']))}")


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:100]


def _out(text: str) -> None:
    """Print ``text`` on stdout for a person, control characters shown, never sent."""
    typer.echo(terminal_safe(text))


def _group() -> Any:
    """``rlm harness``: ``run`` (``rlm run``'s own command, in the harness) and ``tools``."""
    group = typer.main.get_group(app)
    group.add_command(run_command, "run")
    return group


#: The ``harness`` command of ``rlm`` (its ``CommandSpec``).
harness_group = _group()
