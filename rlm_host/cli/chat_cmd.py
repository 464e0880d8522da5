"""``rlm chat``: a conversation over one context, each line a turn (a run) that sees the earlier ones.

Lines starting with ``/`` are commands: ``/context`` (what the context is), ``/model NAME`` (the root model from
the next turn, refused when it cannot be loaded), ``/vars`` (the REPL variables kept between turns), ``/save`` (where
the session is), ``/help``, ``/exit``; another ``/word`` is called unknown. Each turn is shown as ``rlm run`` shows a
run (``run_cmd.watched``: the live view, the terminal approver) and takes every run option as a flag. Ctrl-C during a
turn cancels that turn (its run ends ``cancelled``), and an error in a turn is shown as ``rlm`` shows one and the
session goes on; at the prompt, or end of input, it ends the session, which stays saved: ``rlm chat --resume ID``
continues it with the model and sandbox it ran with, unless flags say otherwise (a session id that is not one, or a
file outside the sessions folder, exits 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperOption

from rlm_host.cli.app import cli_state, echo
from rlm_host.cli.run_cmd import ContextsCommand, for_stdout, run_params, watched
from rlm_host.errors import RlmError
from rlm_host.text import did_you_mean

HELP = "/context  /model NAME  /vars  /save  /help  /exit"
COMMANDS = ("/context", "/model", "/vars", "/save", "/help", "/exit", "/quit")


def chat_session(context: tuple[str, ...], resume: Optional[str], list_: bool, quiet: bool, **flags: Any) -> None:
    """Talk with an RLM about a context: each question a run; variables and conversation kept, and saved."""
    from rlm_host.api.client import RLM
    from rlm_host.api.session import list_sessions, session_file
    from rlm_host.cli import run_flags
    from rlm_host.cli.main import report
    from rlm_host.engine.context_loading import load_context_with_loaders

    state = cli_state()
    if list_:
        for entry in list_sessions(state.settings().home):
            echo(f"{entry['id']}  {entry['turns']} turns  {entry['last'][:70]}")
        return
    loaded = run_flags.apply(state.settings(), flags)  # a bad value is refused now, named by its flag
    chosen = {name: getattr(loaded.settings.run, name) for name, value in flags.items() if value not in (None, ())}
    rlm = RLM(settings=loaded)
    if context and len(context) == 1 and not Path(context[0]).is_dir():
        value: Any = Path(context[0]).resolve()  # kept as a path: a resumed session reads the file again
    else:
        value = load_context_with_loaders(list(context), rlm.runner.host, loaded, rlm.home) if context else None
    if resume is not None:
        session_file(rlm.home, resume)  # an id that is not a session's is refused first, whatever else is wrong
    for given in filter(None, (chosen.get("model"), chosen.get("sub_model"))):
        rlm.check(model=given)  # a model that cannot be loaded is refused now, not at the first question
    if chosen.get("environment"):
        rlm.runner.host.environments().get(chosen["environment"])  # an unknown name is refused now too (exit 2)
    if chosen.get("framework") not in (None, "native"):
        rlm.runner.host.frameworks().get(chosen["framework"])
    session = rlm.session(value, resume=resume, **chosen)
    using = f"model={session.using('model')} sandbox={_sandbox(session, rlm)}"  # the flags, else what it ran with
    if resume and isinstance(session.context, Path):
        using += f" context={session.context}"  # the file the session names is read again: say which
    typer.echo(f"chat {session.id}" + (f" (resumed, {len(session.turns)} turns)" if resume else "")
               + f"  {using}  {HELP}", err=True)
    line = ""
    while line.partition(" ")[0] not in ("/exit", "/quit"):
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            typer.echo("", err=True)
            break
        try:  # an error is shown as rlm shows one, and the session goes on (it is saved after every turn)
            if line.startswith("/"):
                _command(line, session, rlm)
            elif line:
                with watched(rlm, quiet) as (on_event, _):
                    _show_turn(session.ask(line, on_event=on_event))
        except KeyboardInterrupt:
            typer.echo("(turn cancelled)", err=True)
        except Exception as exc:
            report(exc, debug=state.debug)
    typer.echo(f"session saved: rlm chat --resume {session.id}", err=True)


def _show_turn(result: Any) -> None:
    """A turn's answer on stdout (``rlm> …``, its control characters shown on a terminal), or why there is none."""
    if result.termination_reason == "cancelled":
        typer.echo("(turn cancelled)", err=True)
    elif result.final_response is not None:
        typer.echo(for_stdout(f"rlm> {result.final_response}"))
    else:
        typer.echo(for_stdout(f"rlm> (no answer: {result.termination_reason}"
                              f"{': ' + result.error if result.error else ''})"))


def _command(line: str, session: Any, rlm: Any) -> None:
    """Run one /command (``/exit`` and ``/quit`` end the session: the caller's loop sees them)."""
    name, _, argument = line.partition(" ")
    if name == "/context" and isinstance(session.context, Path):
        echo(f"context: {session.context} ({session.context.stat().st_size:,} bytes, read at every turn)")
    elif name == "/context":
        from rlm_host.context import describe_context

        meta = describe_context(session.context)
        echo(f"context: {meta.get('type')}, {meta.get('total_chars', 0):,} characters"
             + (f", {meta.get('documents')} documents" if meta.get("documents") else ""))
    elif name == "/model" and argument.strip():
        rlm.check(model=argument.strip())  # raises: the model stays as it was
        session.options["model"] = argument.strip()
        echo(f"model from the next turn: {argument.strip()}")
    elif name == "/model":
        echo(f"model: {session.using('model') or 'auto'}")
    elif name == "/vars":
        kept = ", ".join(f"{k} ({type(v).__name__})" for k, v in sorted(session.variables.items())) or "none"
        echo(f"kept: {kept}" + (f"\nnot kept: {', '.join(session.dropped)}" if session.dropped else ""))
    elif name == "/save":
        echo(f"saved: {session.save()}  (rlm chat --resume {session.id})")
    elif name == "/help":
        echo(HELP)
    elif name not in ("/exit", "/quit"):
        echo(f"unknown command {name}{did_you_mean(name, COMMANDS, show=str)}; {HELP}")


def _sandbox(session: Any, rlm: Any) -> str:
    """The sandbox the next turn uses; for ``auto``, the runtime it picks here."""
    from rlm_host.engine.sandbox_plan import choose_sandbox

    name = session.using("sandbox") or "auto"
    if name != "auto":
        return name
    try:
        return f"auto ({choose_sandbox(rlm.runner.host, rlm.runner.loaded, 'auto').name})"
    except RlmError:
        return "auto (none ready)"


#: ``rlm chat``: ``--context`` (several paths), ``--resume``, ``--list``, every run option as a flag, ``-q``.
chat = ContextsCommand(name="chat", callback=chat_session, rich_markup_mode=None, help=(chat_session.__doc__ or "")
                       .split("\n")[0], params=[
    TyperOption(param_decls=["--resume", "resume"], metavar="ID", help="Continue a saved session (its id)."),
    TyperOption(param_decls=["--list", "list_"], is_flag=True, help="List the saved sessions and exit."),
    *run_params(context="A file or a directory to talk about; several: --context a.txt b.md.", as_json=False,
                quiet="No live view of the steps; answers only.")])
