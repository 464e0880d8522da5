"""``rlm mcp serve``: the MCP server over stdio (default) or streamable HTTP on loopback with a bearer token."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rlm_host.sdk.commands import apply_run_flags, run_option

app = typer.Typer(help="An MCP server exposing rlm runs, saved runs and benchmarks as tools.",
                  rich_markup_mode=None, add_completion=False, no_args_is_help=True)


@app.callback()
def mcp() -> None:
    """An MCP server exposing rlm runs, saved runs and benchmarks as tools."""


@app.command()
def serve(
    ctx: typer.Context,
    transport: str = typer.Option("stdio", "--transport", "-t", help="stdio, or http (streamable HTTP at /mcp)."),
    host: str = typer.Option("127.0.0.1", "--host", help="HTTP: address to listen on (loopback only)."),
    port: int = typer.Option(8765, "--port", "-p", min=0, max=65535, help="HTTP: port to listen on."),
    token: Optional[str] = typer.Option(None, "--token", envvar="RLM_MCP_TOKEN", show_envvar=True,
                                        help="HTTP: the bearer token clients must send (default: a new random one, "
                                        "printed to stderr)."),
    root: Optional[List[Path]] = typer.Option(None, "--root", help="A folder clients may read (repeat; default: the "
                                              "current directory)."),
    model: Optional[str] = run_option("model"),
    sub_model: Optional[str] = run_option("sub_model"),
    allow_model: Optional[List[str]] = typer.Option(None, "--allow-model", help="One more model clients may choose "
                                                    "and runs may call as a sub-model (repeat)."),
    sandbox: Optional[str] = run_option("sandbox"),
    allow_client_sandbox: Optional[List[str]] = typer.Option(
        None, "--allow-client-sandbox", help="Let clients pick this sandbox although it is NOT a security boundary "
        "(e.g. process; repeat)."),
    max_steps: Optional[int] = run_option("max_steps"),
    max_depth: Optional[int] = run_option("max_depth"),
    timeout: Optional[float] = run_option("timeout"),
    max_cost: Optional[float] = run_option("max_cost"),
) -> None:
    """Serve the rlm tools (rlm_run, rlm_runs_list, rlm_runs_show, rlm_runs_active, rlm_runs_cancel, rlm_bench_run)
    to MCP clients.

    The run options set every run and are ceilings for clients: a client may choose --model, --sub-model or an
    --allow-model (nothing else), a sandbox at least as isolating as --sandbox, and lower --max-steps,
    --max-depth, --timeout and --max-cost, never raise them."""
    from rlm_host import RLM, CommandServices, ConfigError
    from rlm_host.sdk.commands import is_loopback_host

    from rlm_mcp.roots import Roots

    if transport not in ("stdio", "http"):
        raise ConfigError(f"unknown transport {transport!r}", hint="choose stdio or http")
    if transport == "http" and not is_loopback_host(host):
        raise ConfigError(f"refusing to listen on {host}: only loopback addresses are served",
                          hint="use 127.0.0.1, ::1 or localhost; put a TLS proxy in front for remote "
                               "clients")
    try:
        roots = Roots(root or [Path.cwd()])
    except (OSError, NotADirectoryError) as exc:
        raise ConfigError(f"bad --root: {exc}", hint="give existing folders") from None
    given = {"model": model, "sub_model": sub_model, "sandbox": sandbox, "max_steps": max_steps,
             "max_depth": max_depth, "timeout": timeout, "max_cost": max_cost}
    services = CommandServices.of(ctx)  # the command's settings (--config honoured), the flags named as sources
    rlm = RLM(settings=apply_run_flags(services.settings, given), home=services.home)
    from rlm_mcp.ceilings import operator_ceilings
    from rlm_mcp.server import build_server

    ceilings, allowed_subs = operator_ceilings(rlm, given, allow_model or [], allow_client_sandbox or [])
    defaults = {**given, "allowed_sub_models": allowed_subs or None}
    server = build_server(rlm, roots, ceilings, defaults=defaults)
    served = _what_is_served(rlm, roots, ceilings)
    if transport == "stdio":
        import anyio

        _say("serving MCP over stdio: JSON-RPC on stdin/stdout, for an MCP client that starts this command")
        _say(served)
        _say("stop with Ctrl-C (or close stdin)")
        anyio.run(server.run_stdio_async)
        return
    _serve_http(server, host, port, token, served)


def _say(line: str) -> None:
    """One ``rlm mcp:`` line on stderr (stdout is stdio's protocol channel)."""
    print(f"rlm mcp: {line}", file=sys.stderr, flush=True)


def _what_is_served(rlm, roots, ceilings) -> str:
    """The roots, model and sandbox every run gets (the configured ones when no flag set them)."""
    run = rlm.runner.loaded.settings.run
    model = run.model
    sandbox = ceilings.sandbox if ceilings.sandbox != "auto" else "auto (the best installed security boundary)"
    folders = ", ".join(str(folder) for folder in roots.folders)
    return (f"roots {folders} · model {model} · sandbox {sandbox} · clients may pick: "
            f"{', '.join(ceilings.models) or 'no model'}")


def _serve_http(server, host: str, port: int, token: Optional[str], served: str = "") -> None:
    """Streamable HTTP at ``http://host:port/mcp`` behind the bearer guard, until interrupted."""
    import uvicorn

    from rlm_mcp.http_guard import BearerGuard

    if not token:
        token = secrets.token_urlsafe(32)
        print(f"rlm mcp: bearer token (send 'Authorization: Bearer <token>'): {token}", file=sys.stderr, flush=True)
    asgi = BearerGuard(server.streamable_http_app(host=host), token)
    config = uvicorn.Config(asgi, host=host, port=port, log_level="warning", lifespan="on")
    shown = f"[{host}]" if ":" in host else host
    _say(f"serving streamable HTTP at http://{shown}:{port}/mcp")
    if served:
        _say(served)
    _say("stop with Ctrl-C")
    uvicorn.Server(config).run()
