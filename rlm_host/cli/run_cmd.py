"""``rlm run TASK``: run one task and show it live; ``--json`` prints the RunResult on stdout."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from rlm_host.cli.context_args import command

EXIT_USAGE = 2
EXIT_INCOMPLETE = 1
EXIT_CANCELLED = 130
#: The run answered, but its trajectory could not be written completely (RunResult.record_error).
EXIT_RECORD_INCOMPLETE = 3


def run_task(
    ctx: typer.Context,
    task: str = typer.Argument(..., help="The question or task."),
    context: Optional[List[str]] = typer.Option(None, "--context", "-c", help="A file, a directory, or - for stdin; several: --context a.txt b.md (or repeat --context)."),
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
    from rlm_host.errors import ModelError
    from rlm_host.plugins import get_host

    state = ctx.find_root().obj
    loaded = state.settings()
    host = get_host()
    runner = RLMRunner(loaded=loaded, host=host)
    as_path = host.environments().get(env or loaded.settings.run.environment).context_as_path
    check_sandbox(host, loaded, sandbox or loaded.settings.run.sandbox)
    on_event = None
    if not quiet and not state.log_json:  # the live view is prose: not with JSON log lines on stderr
        from rlm_host.cli.live import LiveView

        on_event = LiveView()
    try:
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
    except ModelError as exc:  # before the run: the model cannot be set up (no key, no file): bad input
        exc.exit_code = EXIT_USAGE
        raise
    finally:
        if on_event is not None:
            on_event.close()
    if as_json:
        typer.echo(result.model_dump_json(indent=2))
    elif result.final_response is not None:  # stdout is the answer or nothing: the exit code says the rest
        typer.echo(result.final_response)
    if not as_json:
        if result.final_response is None and result.termination_reason != "error" and on_event is None:
            logs.say(f"no answer: the run ended {result.termination_reason}", event="no answer", level="warning",
                     reason=result.termination_reason)  # the live view's last line says it otherwise; errors below
        logs.say(f"trajectory: {result.trajectory_path}", event="trajectory", path=str(result.trajectory_path))
    exit_with(result)


def exit_with(result) -> None:
    """Exit as the README's rule says: 0 answered, 1 no final answer, 3 answered with an incomplete record,
    130/143/129 interrupted (Ctrl-C, SIGTERM, SIGHUP)."""
    from rlm_host import logs

    if result.termination_reason == "cancelled":
        from rlm_host.signals import exit_code

        raise typer.Exit(exit_code(EXIT_CANCELLED))
    if result.error and result.termination_reason == "error":
        logs.say(f"error: {result.error}", event="run failed", level="error", error=result.error)
    if result.record_error:
        logs.say(f"! {result.record_error}", event="record incomplete", level="warning")
    if not result.completed:
        raise typer.Exit(EXIT_INCOMPLETE)
    if result.record_error:
        raise typer.Exit(EXIT_RECORD_INCOMPLETE)


def check_sandbox(host, loaded, name: str) -> None:
    """A sandbox named on the command line or in settings must be ready; else bad input (exit 2), not a run."""
    from rlm_host.errors import ConfigError

    if not name or name == "auto":
        return
    spec = host.sandboxes().get(name)  # an unknown name: UnknownComponentError, exit 2
    ready = spec.readiness(loaded.component("sandbox", spec.name))
    if not ready.ok:
        raise ConfigError(f"the {spec.name} sandbox is not ready: {ready.detail}",
                          hint=ready.hint or "rlm plugins doctor shows what each sandbox needs")  # fmt: skip


run = command(run_task, "run")
