"""``rlm run TASK``: run one task and show it live; ``--json`` prints the RunResult on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

EXIT_INCOMPLETE = 1
EXIT_CANCELLED = 130
#: The run answered, but its trajectory could not be written completely (RunResult.record_error).
EXIT_RECORD_INCOMPLETE = 3


def run(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="The question or task."),
    context: Optional[List[str]] = typer.Option(None, "--context", "-c", help="File, files, directory, or - for stdin."),
    env: Optional[str] = typer.Option(None, "--env", help="Environment (pure_rlm, generic, …)."),
    framework: Optional[str] = typer.Option(None, "--framework", help="'native' or a framework adapter."),
    model: Optional[str] = typer.Option(None, "--model", help="Root model as provider:model."),
    sub_model: Optional[str] = typer.Option(None, "--sub-model", help="Model for llm_query (default: the root model)."),
    allow_sub_model: Optional[List[str]] = typer.Option(None, "--allow-sub-model", help="Another model the run's "
                                                        "code may name in llm_query(..., model=NAME) (repeat)."),
    sandbox: Optional[str] = typer.Option(None, "--sandbox", help="Sandbox runtime (default: best installed)."),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="Project folder for environments that edit files "
                                           "(e.g. dspy): the sandbox's read-write working directory."),
    allow_any_workdir: Optional[bool] = typer.Option(None, "--allow-any-workdir", help="Let an environment that edits "
                                                     "files work in a home, documents or system folder."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Root turns before stopping."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Wall-clock limit of the run, seconds."),
    exec_timeout: Optional[float] = typer.Option(None, "--exec-timeout", help="Limit of one code execution, seconds."),
    max_depth: Optional[int] = typer.Option(None, "--max-depth", help="Recursion depth of rlm_query / delegate."),
    max_llm_calls: Optional[int] = typer.Option(None, "--max-llm-calls", help="Sub-model calls allowed."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", help="Token budget of the run tree."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", help="Cost budget of the run tree, USD."),
    strict: Optional[bool] = typer.Option(None, "--strict", help="Refuse a run whose --max-cost cannot be enforced."),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="Server URL for the model's provider (e.g. a local OpenAI-compatible server)."),
    reply_format: Optional[str] = typer.Option(None, "--reply-format", help="Enforce the environment's reply shape (a grammar, a JSON schema) on the root model: "
                                                 "auto (local llama.cpp), on (wherever the provider can), off."),
    instructions: Optional[str] = typer.Option(None, "--instructions", help="Domain guidance appended to the system "
                                               "prompt: TEXT, or @FILE to read it from a file."),
    sink: Optional[List[str]] = typer.Option(None, "--sink", help="Also feed this observability sink (repeat, or "
                                             "a,b); [run] sinks sets the default list."),
    as_json: bool = typer.Option(False, "--json", help="Print the RunResult as JSON on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live view."),
) -> None:
    """Run a task with an RLM: the context stays in the sandbox, the model explores it with code."""
    from rlm_host import logs
    from rlm_host.engine.context_loading import load_context_with_loaders
    from rlm_host.engine.runner import RLMRunner
    from rlm_host.plugins import get_host

    state = ctx.find_root().obj
    loaded = state.settings()
    host = get_host()
    runner = RLMRunner(loaded=loaded, host=host)
    as_path = host.environments().get(env or loaded.settings.run.environment).context_as_path
    on_event = None
    if not quiet and not state.log_json:  # the live view is prose: not with JSON log lines on stderr
        from rlm_host.cli.live import LiveView

        on_event = LiveView()
    result = runner.run_task(
        task,
        context=load_context_with_loaders(list(context or []), host, loaded, runner.home, as_path=as_path,
                                          lazy_text=True),  # a large text file stays on disk: TextFile
        on_event=on_event,
        environment=env, framework=framework, model=model, sub_model=sub_model, sandbox=sandbox,
        allowed_sub_models=[*loaded.settings.run.allowed_sub_models, *(allow_sub_model or [])] or None,
        max_steps=max_steps, timeout=timeout, exec_timeout=exec_timeout, max_depth=max_depth,
        max_llm_calls=max_llm_calls, max_tokens=max_tokens, max_cost=max_cost, strict=strict, base_url=base_url,
        reply_format=reply_format, workdir=workdir, sinks=loaded.settings.run.with_sinks(sink),
        instructions=instructions, allow_any_workdir=allow_any_workdir,
    )  # fmt: skip
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    else:
        typer.echo(result.final_response if result.final_response is not None else "(no answer)")
        logs.say(f"trajectory: {result.trajectory_path}", event="trajectory", path=str(result.trajectory_path))
    if result.termination_reason == "cancelled":
        from rlm_host.signals import exit_code

        raise typer.Exit(exit_code(EXIT_CANCELLED))  # 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP
    if result.error and result.termination_reason == "error":
        logs.say(f"error: {result.error}", event="run failed", level="error", error=result.error)
    if result.record_error:
        logs.say(f"warning: {result.record_error}", event="record incomplete", level="warning")
    if not result.completed:
        raise typer.Exit(EXIT_INCOMPLETE)
    if result.record_error:
        raise typer.Exit(EXIT_RECORD_INCOMPLETE)

