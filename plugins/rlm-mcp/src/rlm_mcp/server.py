"""The MCP server: the tools rlm_run, rlm_runs_list, rlm_runs_show, rlm_runs_active, rlm_runs_cancel and
rlm_bench_run on the SDK's ``MCPServer``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from typing import TYPE_CHECKING, Annotated, Any, Optional

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from rlm_host import RLM, RlmError
from rlm_host.sdk.commands import run_option_type

from rlm_mcp import bench, runs
from rlm_mcp.ceilings import CeilingError, Ceilings
from rlm_mcp.http_guard import DISCONNECTED_KEY
from rlm_mcp.models import ActiveList, BenchOutput, RunDetail, RunOutput, RunsList
from rlm_mcp.roots import WALK_SECONDS, OutsideRoots, Roots
from rlm_mcp.runner import run_with_progress, to_output

# The run options a client may set (within the operator's ceilings): typed, limited and described by their one
# declaration, the host's RunSettings, so the tool's input schema cannot drift from `rlm run` and `RLM(...)`.
if TYPE_CHECKING:  # what a type checker can read of them (None: the configured value)
    Model = Optional[str]
    Sandbox = Optional[str]
    MaxSteps = Optional[int]
    MaxDepth = Optional[int]
    Timeout = Optional[float]
    MaxCost = Optional[float]
else:
    Model = run_option_type("model")
    Sandbox = run_option_type("sandbox")
    MaxSteps = run_option_type("max_steps")
    MaxDepth = run_option_type("max_depth")
    Timeout = run_option_type("timeout")
    MaxCost = run_option_type("max_cost")

INSTRUCTIONS = (
    "Recursive Language Models (rlm): rlm_run answers a query over a text, a file or a folder by letting a model "
    "write and run code over it step by step (progress is reported per step); rlm_runs_list / rlm_runs_show read "
    "saved runs; rlm_runs_active lists runs in progress and rlm_runs_cancel stops one this server started; "
    "rlm_bench_run runs a benchmark preset. Paths must lie inside the server's roots."
)


def _result(model: Any, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=model.model_dump(mode="json"))


def _error(exc: Exception) -> ToolError:
    if isinstance(exc, RlmError):
        hint = f" (hint: {exc.hint})" if getattr(exc, "hint", None) else ""
        return ToolError(f"{exc.message}{hint}")
    return ToolError(str(exc))


def _disconnected(ctx: Context) -> Any:
    """A callable telling whether the HTTP client's connection for this request closed (stdio: never)."""
    request = getattr(ctx.request_context, "request", None)
    flag = getattr(request, "scope", {}).get(DISCONNECTED_KEY) if request is not None else None
    return flag.is_set if flag is not None else (lambda: False)


def build_server(rlm: RLM, roots: Roots, ceilings: Ceilings, *,
                 defaults: Optional[dict[str, Any]] = None) -> MCPServer:
    """An ``MCPServer`` whose tools run ``rlm`` and read runs under ``rlm.home``; paths checked against ``roots``,
    a client's sandbox, model and limits against the operator's ``ceilings``; ``defaults`` go into every run."""
    server = MCPServer("rlm", instructions=INSTRUCTIONS, log_level="WARNING")
    defaults = {k: v for k, v in (defaults or {}).items() if v is not None}
    sandboxes = rlm.runner.host.sandboxes()

    def canonical(name: str) -> Optional[str]:
        """The installed sandbox called ``name`` (or an alias of it), else None."""
        try:
            return sandboxes.get(name).name if name in sandboxes else None
        except RlmError:  # a name two plugins claim
            return None

    async def checked_path(path: str) -> Path:
        """``roots.check_context`` off the event loop, given up after a bounded wait."""
        try:
            with anyio.fail_after(WALK_SECONDS + 5):
                return await anyio.to_thread.run_sync(roots.check_context, path, abandon_on_cancel=True)
        except TimeoutError:
            raise OutsideRoots(f"checking path {path!r} took too long; pass a smaller folder or a file") from None

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
    async def rlm_run(ctx: Context, query: str, text: Optional[str] = None, path: Optional[str] = None,
                      model: Model = None, sandbox: Sandbox = None, max_steps: MaxSteps = None,
                      max_depth: MaxDepth = None, timeout: Timeout = None,
                      max_cost: MaxCost = None) -> Annotated[CallToolResult, RunOutput]:
        """Run a Recursive Language Model: answer `query` over `text`, or over the file or folder at `path`
        (inside the server's roots), or over no context. `model` and `sandbox` must be ones the server allows
        (an error lists them); `max_steps`, `max_depth`, `timeout` and `max_cost` may lower the server's limits,
        not raise them. Reports progress once per step; returns the final answer with the run id, steps, tokens,
        cost and the saved trajectory's path."""
        if text is not None and path is not None:
            raise ToolError("give text or path, not both")
        try:
            asked = ceilings.run_options(model=model, sandbox=sandbox, canonical=canonical, max_steps=max_steps,
                                         max_depth=max_depth, timeout=timeout, max_cost=max_cost)
            context: Any = text if path is None else await checked_path(path)
        except (OutsideRoots, CeilingError) as exc:
            raise ToolError(str(exc)) from None
        options = {**defaults, **asked}
        try:
            result = await run_with_progress(rlm, context, query, options, ctx.report_progress, _disconnected(ctx))
        except (RlmError, TypeError, ValueError) as exc:
            raise _error(exc) from None
        out = to_output(result)
        head = f"{out.termination_reason} after {out.steps} steps ({out.run_id})"
        return _result(out, f"{out.final_response}\n\n[{head}]" if out.final_response is not None else head)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def rlm_runs_list(limit: int = 20) -> Annotated[CallToolResult, RunsList]:
        """Saved runs, newest first (at most `limit`; 0: all): id, task, model, outcome, steps, tokens, cost."""
        listed = runs.list_runs(rlm.home, limit)
        lines = [f"{r.run_id} {r.termination_reason} steps={r.steps} {r.task}" for r in listed.runs]
        return _result(listed, "\n".join(lines) or f"no saved runs in {rlm.home / 'runs'}")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def rlm_runs_show(run_id: str) -> Annotated[CallToolResult, RunDetail]:
        """One saved run (its id, a unique prefix of one, or 'latest'): summary, final answer and every root
        step's action, code and output (long texts cut)."""
        try:
            detail = runs.show_run(rlm.home, run_id)
        except (RlmError, ValueError) as exc:
            raise _error(exc) from None
        return _result(detail, f"{detail.run_id}: {detail.termination_reason} after {detail.steps} steps; "
                               f"answer: {detail.final_response}")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def rlm_runs_active() -> Annotated[CallToolResult, ActiveList]:
        """Runs in progress on the server's machine (any process): id, status (active, cancelling, or dead when its
        process is gone), task, model; `own` marks the runs this server started (the ones rlm_runs_cancel stops).
        They are the runs of the user the server runs as, whatever folder each runs in."""
        listed = runs.active_runs()
        lines = [f"{r.run_id} {r.status}{' (this server)' if r.own else ''} {r.task}" for r in listed.runs]
        return _result(listed, "\n".join(lines) or "no active runs")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True))
    def rlm_runs_cancel(run_id: str) -> Annotated[CallToolResult, ActiveList]:
        """Stop a run this server started (its id, a unique prefix, or 'all'): it stops at its next check (a model
        call in progress is abandoned) and its trajectory ends `cancelled`."""
        try:
            stopped = runs.cancel_run(run_id)
        except (RlmError, ValueError) as exc:
            raise _error(exc) from None
        return _result(stopped, "\n".join(f"cancelling {r.run_id}" for r in stopped.runs) or "no runs to cancel")

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, open_world_hint=True))
    async def rlm_bench_run(preset: str, limit: int = 3,
                            model: Optional[str] = None) -> Annotated[CallToolResult, BenchOutput]:
        """Run the first `limit` cases of a benchmark preset (`rlm bench list`) and score them; `model` must be one
        the server allows. Needs the rlm-bench plugin. Returns the accuracy and each case with its score."""
        try:
            chosen = ceilings.check_model(model)
        except CeilingError as exc:
            raise ToolError(str(exc)) from None
        try:
            summary = await bench.run_preset(preset, limit, chosen or defaults.get("model"), cwd=Path.cwd(),
                                             sandbox=defaults.get("sandbox"), sub_model=defaults.get("sub_model"),
                                             allowed_sub_models=defaults.get("allowed_sub_models"),
                                             limits=ceilings.limits)
        except bench.BenchUnavailable as exc:
            raise ToolError(str(exc)) from None
        text = f"{summary.preset}: accuracy {summary.accuracy} over {summary.cases_run} cases"
        return _result(summary, text + "\n" + json.dumps([c.model_dump() for c in summary.cases], default=str)[:2000])

    return server
