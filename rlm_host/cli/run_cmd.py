"""``rlm run TASK``: run one task and show it live; ``--json`` prints the RunResult on stdout.

The kit of every command that starts runs (``rlm run``, ``rlm harness run``, ``rlm runs fork``, ``rlm chat``): the
run options as flags (:func:`run_params`), the live view and the terminal approver around each run (:func:`watched`),
what is printed when it is over and the exit codes (:func:`show_result`).

``--context a.txt b.md``: click gives an option one value; :class:`ContextsCommand` rewrites the words after a
``--context`` value into more ``--context`` options before click parses them: every following word that names an
existing path (for a command without arguments, such as ``rlm chat``, every following word that is not an option).
A word left over that is no task gets an ``error:`` naming it and a ``hint:`` saying how to pass several contexts."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from typing import Any, Callable, Iterator, Optional

import typer
from typer import _click as click  # typer vendors its click; commands must come from the same module

from typer.core import TyperArgument, TyperCommand, TyperOption

from rlm_host import logs
from rlm_host.cli.app import cli_state, echo_json
from rlm_host.errors import InputError, ModelError
from rlm_host.text import terminal_safe

NAMES = ("--context", "-c")
HINT = ("several contexts: --context a.txt b.md (each an existing path) or --context a.txt --context b.md; "
        "quote a task that has spaces")


class ContextsCommand(TyperCommand):
    """A command whose ``--context`` takes one or more paths."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, spread(args, self))
        except click.exceptions.UsageError as exc:
            if not (extra := re.search(r"unexpected extra argument(?:s|\(s\))? \((.*)\)", exc.message)):
                raise
            missing = [w for w in extra.group(1).split() if not os.path.lexists(w)]
            why = f" (no such file: {', '.join(missing)})" if missing else ""
            raise InputError(f"unexpected argument(s): {extra.group(1)}{why}", hint=HINT) from None


def spread(args: list[str], command: click.Command) -> list[str]:
    """``args`` with each word that follows a ``--context`` value and is one more context turned into
    ``--context WORD``; the command's last argument word is never taken (it is the task)."""
    valued = {name for p in command.params if p.param_type_name == "option" and not getattr(p, "is_flag", False)
              and not getattr(p, "count", False) for name in p.opts + p.secondary_opts}
    takes_arguments = any(p.param_type_name == "argument" for p in command.params)
    out: list[str] = []
    taken: list[int] = []  # where in ``out`` each spread word went
    free, following, index = 0, False, 0  # free: argument words left for the command
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            out.extend(args[index - 1:])
            free += len(args) - index
            break
        if following and not word.startswith("-") and (not takes_arguments or os.path.lexists(word)):
            taken.append(len(out))
            out += ["--context", word]
            continue
        following = word in NAMES or word.startswith("--context=")
        out.append(word)
        if (word in valued or word in NAMES) and index < len(args):
            out.append(args[index])
            index += 1
        elif not word.startswith("-") or word == "-":
            free += 1
    if takes_arguments and taken and not free:  # the task named a file: the last word is the task after all
        out[taken[-1]:taken[-1] + 2] = [out[taken[-1] + 1]]
    return out


EXIT_USAGE = 2
EXIT_INCOMPLETE = 1
EXIT_CANCELLED = 130
#: The run answered, but its trajectory could not be written completely (RunResult.record_error).
EXIT_RECORD_INCOMPLETE = 3


def run_task(task: str, as_json: bool, quiet: bool, context: tuple[str, ...] = (), *, defaults: Any = None,
             prepare: Optional[Callable[..., Any]] = None, **flags: Any) -> None:
    """Run a task with an RLM: the context stays in the sandbox, the model explores it with code.

    A client of the public ``RLM`` API, as a Python program would be: the flags become run settings (each
    recorded as coming from its flag), ``RLM.completion`` runs the task, the live view renders its events.
    ``defaults``: run options of the command itself (``rlm harness run``: its environment), under the flags;
    ``prepare(loaded, extras)``: the command's own flags (``extras``) applied to the settings."""
    from rlm_host.cli import run_flags
    from rlm_host.config import run_options
    from rlm_host.context import ContextFiles

    extras = {name: flags.pop(name) for name in list(flags) if name not in run_options.names()}
    command = click.globals.get_current_context().command_path
    loaded = cli_state().settings().with_run(defaults or {}, {name: command for name in defaults or {}})
    loaded = run_flags.apply(loaded, flags)
    if prepare is not None:
        loaded = prepare(loaded, extras)
    run_and_show(loaded, task, ContextFiles(tuple(context)) if context else None, as_json, quiet)


def run_and_show(loaded: Any, task: str, context: Any, as_json: bool, quiet: bool, *,
                 connectors: Optional[dict[str, Any]] = None,
                 watch: Optional[Callable[[Any], None]] = None) -> None:
    """Run ``task`` with ``loaded`` through ``RLM``, shown by the live view unless ``quiet`` (or JSON logs), then
    ``show_result``; ``watch`` sees every event too (``rlm runs fork``: the replayed steps)."""
    from rlm_host.api.client import RLM

    rlm = RLM(settings=loaded, connectors=connectors)
    with watched(rlm, quiet, watch) as (on_event, live):
        result = rlm.completion(context, task, on_event=on_event)
    show_result(result, as_json, live=live is not None)


@contextlib.contextmanager
def watched(rlm: Any, quiet: bool, watch: Optional[Callable[[Any], None]] = None) -> Iterator[tuple[Any, Any]]:
    """Around one run of ``rlm``: (the event callback to give it, the live view): the live view unless ``quiet`` or
    JSON logs, ``watch`` too, and the person at the terminal as ``rlm``'s approver. A model that cannot be set up
    (no key, no file) is bad input: exit 2."""
    from rlm_host.cli.approve_prompt import TerminalApprover

    live = None
    if not quiet and not cli_state().log_json:  # the live view is prose: not with JSON log lines on stderr
        from rlm_host.cli.live import LiveView

        live = LiveView()
    viewers = [view for view in (watch, live) if view is not None]
    rlm.approver = TerminalApprover.if_attended(live)
    try:
        yield (lambda event: [view(event) for view in viewers]) if viewers else None, live
    except ModelError as exc:
        exc.exit_code = EXIT_USAGE
        raise
    finally:
        if live is not None:
            live.close()


def show_result(result: Any, as_json: bool, *, live: bool) -> None:
    """What a run command prints when its run is over (the answer on stdout, or the RunResult as JSON, the
    trajectory's path), then its exit code; ``live``: a live view showed the run."""
    if as_json:
        echo_json(result.model_dump(mode="json"))
    elif result.final_response is not None:  # stdout is the answer or nothing: the exit code says the rest
        click.echo(for_stdout(result.final_response))
    if not as_json:
        if result.final_response is None and result.termination_reason != "error" and not live:
            logs.say(f"no answer: the run ended {result.termination_reason}", event="no answer", level="warning",
                     reason=result.termination_reason)  # the live view's last line says it otherwise; errors below
        logs.say(f"trajectory: {result.trajectory_path}", event="trajectory", path=str(result.trajectory_path))
    # the exit, as the README's rule says: 0 answered, 1 no final answer, 3 answered with an incomplete record,
    # 130/143/129 interrupted (Ctrl-C, SIGTERM, SIGHUP); rlm_host.cli.main then waits for the sinks: the answer is out
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


def for_stdout(answer: str) -> str:
    """The answer as printed: as it is into a pipe or a file (it is the product), with its control characters
    shown, never sent, on a terminal (``terminal_safe``: a model's answer must not drive the screen)."""
    return terminal_safe(answer) if sys.stdout.isatty() else answer


def run_params(offered: Any = None, *, context: str = "", as_json: bool = True,
               quiet: str = "No live view.") -> list[Any]:
    """The options of a command that starts runs: ``--context`` (with its ``context`` help, when given), the run
    options ``offered`` (default: all) as flags, ``--json`` and ``-q``."""
    from rlm_host.cli import run_flags

    return [*([TyperOption(param_decls=["--context", "-c", "context"], multiple=True, metavar="PATH", help=context)]
              if context else []), *run_flags.options(offered),
            *([TyperOption(param_decls=["--json", "as_json"], is_flag=True, help="Print the RunResult as JSON on "
                           "stdout.")] if as_json else []),
            TyperOption(param_decls=["--quiet", "-q", "quiet"], is_flag=True, help=quiet)]


def run_command(name: str = "run", *, help: Optional[str] = None, defaults: Optional[dict[str, Any]] = None,
                exclude: tuple[str, ...] = (), params: tuple[Any, ...] = (), context: bool = True,
                prepare: Optional[Callable[..., Any]] = None) -> click.Command:
    """A command that runs a task the way ``rlm run`` does — the task, ``--context``, every run option as a flag,
    ``--json``, ``-q``, the live view, the exit codes — for a plugin's own run command (``rlm harness run``).

    ``defaults``: run options of the command itself (its environment), which flags override; ``exclude``: run
    options it does not offer; ``params``: its own click options, handed with their values to ``prepare(loaded,
    extras)``, which returns the settings to run with; ``context``: whether it takes ``--context``."""
    from rlm_host.config import run_options

    offered = [name for name in run_options.names() if name not in exclude]
    where = "A file, a directory, or - for stdin; several: --context a.txt b.md (or repeat --context)."
    options = [TyperArgument(param_decls=["task"], required=True, help="The question or task."), *params,
               *run_params(offered, context=where if context else "")]
    callback = functools.partial(run_task, defaults=defaults, prepare=prepare)
    return ContextsCommand(name=name, callback=callback, params=options, rich_markup_mode=None,
                           help=help or (run_task.__doc__ or "").split("\n")[0])


run = run_command()
