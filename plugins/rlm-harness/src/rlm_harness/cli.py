"""``rlm harness run TASK --workdir DIR``: the harness environment over a project folder, shown step by step;
``rlm harness tools``: the tools a run would offer (built-in, and each MCP server's, or why it is not available).

Both read ``[environment.harness]`` (its ``mcp_servers``) from the command's settings; ``--mcp-config FILE``
adds the servers of a Claude Desktop or VS Code JSON file (the user's own choice, so trusted as a flag is). A run
goes through the public ``RLM`` front door with ``environment="harness"``, as a Python program would.

Everything printed for a person goes through ``_out`` (stdout) or ``_say`` (stderr), which show control characters
(C0, DEL, C1) instead of sending them: the answer, errors and step lines hold the model's and the servers' text.
``--json`` output is escaped JSON (``ensure_ascii``)."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, List, Optional

import typer
from rlm_host.sdk.embedding import TerminalApprover, apply_run_flags, run_option, terminal_safe

app = typer.Typer(help="A coding agent over a project folder with MCP tools and approvals.", rich_markup_mode=None,
                  add_completion=False, no_args_is_help=True)  # fmt: skip

EXIT_USAGE = 2


@app.callback()
def harness() -> None:
    """A coding agent over a project folder: files, search, commands and tests in the sandbox, MCP tools."""


def _settings(ctx: typer.Context, mcp_config: Optional[Path], workdir: Optional[Path]) -> Any:
    """The command's settings, with the servers of ``--mcp-config`` added to ``[environment.harness]``."""
    from rlm_host import CommandServices, ConfigError

    from rlm_harness.settings import HarnessSettings, load_mcp_config

    loaded = CommandServices.of(ctx).settings
    if mcp_config is None:
        return loaded
    try:
        servers = load_mcp_config(mcp_config, (workdir or Path.cwd()).resolve())
    except ValueError as exc:
        raise ConfigError(f"--mcp-config: {exc}", hint="a JSON file like Claude Desktop's "
                          '{"mcpServers": {"NAME": {"command": …, "args": […]}}}') from None  # fmt: skip
    current = loaded.component("environment", "harness") or HarnessSettings()
    merged = current.model_copy(update={"mcp_servers": {**current.mcp_servers, **servers}})
    return dataclasses.replace(loaded, components={**loaded.components, ("environment", "harness"): merged})


@app.command("run")
def run(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="What to do in the project folder."),
    workdir: Optional[Path] = run_option("workdir"),
    approve: Optional[str] = run_option("approve"),
    approval_rule: Optional[List[str]] = run_option("approval_rules"),
    mcp_config: Optional[Path] = typer.Option(None, "--mcp-config", help="A Claude Desktop / VS Code JSON file "
                                              "of MCP servers ({\"mcpServers\": {…}} or {\"servers\": {…}})."),
    model: Optional[str] = run_option("model"),
    sub_model: Optional[str] = run_option("sub_model"),
    sandbox: Optional[str] = run_option("sandbox"),
    max_steps: Optional[int] = run_option("max_steps"),
    timeout: Optional[float] = run_option("timeout"),
    max_cost: Optional[float] = run_option("max_cost"),
    instructions: Optional[str] = run_option("instructions"),
    allow_any_workdir: Optional[bool] = run_option("allow_any_workdir"),
    as_json: bool = typer.Option(False, "--json", help="Print the RunResult as JSON on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No step lines on stderr."),
) -> None:
    """Work on TASK in the project folder: read, search, edit, run commands and tests in the sandbox, MCP tools.

    Writes, commands and MCP tools that are not read-only follow --approve (auto, ask: y/N on this terminal,
    read-only: refused, the model is told). Exit 0 answered, 1 no final answer, 2 bad input or a sandbox that is
    not ready: in Docker, a missing image with pytest is built first when [sandbox.docker] build_missing allows
    (on a terminal: asked), else the run does not start."""
    from rlm_host import RLM, ModelError


    given = {"workdir": workdir, "approve": approve, "approval_rules": approval_rule, "model": model,
             "sub_model": sub_model, "sandbox": sandbox, "max_steps": max_steps, "timeout": timeout,
             "max_cost": max_cost, "instructions": instructions, "allow_any_workdir": allow_any_workdir}  # fmt: skip
    loaded = apply_run_flags(_settings(ctx, mcp_config, workdir), given)
    rlm = RLM(settings=loaded, approver=TerminalApprover.if_attended(), environment="harness")
    on_event = None if quiet else _print_step
    try:
        result = rlm.completion(None, task, on_event=on_event, event_types=None if quiet else {"step", "run_start"})
    except ModelError as exc:  # before the run: the model cannot be set up (no key, no file): bad input
        exc.exit_code = EXIT_USAGE
        raise
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2))
    elif result.final_response is not None:
        _out(result.final_response)
    if not as_json:
        _say(f"{'answered' if result.completed else 'no answer: ' + result.termination_reason} after "
             f"{result.steps} steps · reward {result.total_reward:+.2f} · trajectory: {result.trajectory_path}")
    if result.error and result.termination_reason == "error":
        _say(f"error: {result.error}")
    if result.termination_reason == "cancelled":
        raise typer.Exit(130)
    if not result.completed:
        raise typer.Exit(1)


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

    loaded = _settings(ctx, mcp_config, workdir)
    settings = loaded.component("environment", "harness") or HarnessSettings()
    folder = (workdir or Path.cwd()).resolve()
    with McpPool(settings.mcp_servers, folder) as pool:
        builtin = [{"name": t.name, "kind": KINDS.get(t.name, "read"), "description": t.description}
                   for t in BUILTIN_TOOLS]  # fmt: skip
        mcp = [{"name": t.name, "server": t.server, "kind": t.kind, "read_only": t.read_only,
                "destructive": t.destructive, "description": t.description, "input_schema": t.input_schema}
               for t in pool.tools]  # fmt: skip
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
        for tool in (t for t in mcp if t["server"] == server["server"]):
            _out(f"  {tool['name']:<36} {tool['kind']:<5} {_first_line(tool['description'])}")


def _print_step(event: Any) -> None:
    """One line per step on stderr (the plugin's own view: the host's live view is not public)."""
    data = event.data
    if event.type == "run_start":
        _say(f"run {event.run_id} · model {data.get('model', '?')} · sandbox {data.get('sandbox', '?')}")
        for notice in data.get("notices") or []:  # a sandbox that is no boundary says so first
            _say(f"! {notice}")
        return
    if event.depth:
        return
    observation = data.get("observation") or {}
    status = "refused" if observation.get("refused") else "ok" if observation.get("success", True) else "failed"
    detail = observation.get("error") or observation.get("path") or observation.get("command") or ""
    _say(f"step {data.get('step')} · {data.get('action')} · {status} · reward {data.get('reward', 0):+.2f}"
         + (f" · {str(detail)[:120]}" if detail else ""))


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:100]


def _out(text: str) -> None:
    """Print ``text`` on stdout for a person, control characters shown, never sent."""
    typer.echo(terminal_safe(text))


def _say(line: str) -> None:
    """One line on stderr (the live view, the summary, errors), control characters shown, never sent."""
    print(terminal_safe(f"rlm harness: {line}"), file=sys.stderr, flush=True)
