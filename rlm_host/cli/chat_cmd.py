"""``rlm chat``: a conversation over one context, each line a turn (a run) that sees the earlier ones.

Lines starting with ``/`` are commands: ``/context`` (what the context is), ``/model NAME`` (the root model from
the next turn, refused when it cannot be loaded), ``/vars`` (the REPL variables kept between turns), ``/save`` (where the session is), ``/help``,
``/exit``; another ``/word`` is called unknown. Ctrl-C during a turn cancels that turn (its run ends
``cancelled``), and an error in a turn is shown and the session goes on; at the prompt, or end of input, it ends
the session, which stays saved: ``rlm chat --resume ID`` continues it with the model and sandbox it ran
with, unless flags say otherwise (a session id that is not one, or a file outside the sessions folder, exits 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from rlm_host.cli.context_args import command
from rlm_host.cli.run_flags import run_option

HELP = "/context  /model NAME  /vars  /save  /help  /exit"
COMMANDS = ("/context", "/model", "/vars", "/save", "/help", "/exit", "/quit")


def chat_session(
    ctx: typer.Context,
    context: Optional[List[str]] = typer.Option(None, "--context", "-c", help="A file or a directory to talk about; several: --context a.txt b.md."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Continue a saved session (its id)."),
    list_: bool = typer.Option(False, "--list", help="List the saved sessions and exit."),
    model: Optional[str] = run_option("model"),
    sub_model: Optional[str] = run_option("sub_model"),
    sandbox: Optional[str] = run_option("sandbox"),
    max_steps: Optional[int] = run_option("max_steps"),
    environment: Optional[str] = run_option("environment"),
    framework: Optional[str] = run_option("framework"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live view of the steps; answers only."),
) -> None:
    """Talk with an RLM about a context: each question a run; variables and conversation kept, and saved."""
    from rlm_host.api.client import RLM
    from rlm_host.api.session import list_sessions, session_file
    from rlm_host.cli.runs_cmd import run_home
    from rlm_host.engine.context_loading import load_context_with_loaders
    from rlm_host.text import terminal_safe

    if list_:
        for entry in list_sessions(run_home(ctx)):
            typer.echo(terminal_safe(f"{entry['id']}  {entry['turns']} turns  {entry['last'][:70]}"))
        return
    state = ctx.find_root().obj
    rlm = RLM(model, sub_model=sub_model, sandbox=sandbox, max_steps=max_steps, environment=environment,
              framework=framework, home=run_home(ctx), settings=state.settings())  # fmt: skip
    loaded = load_context_with_loaders(list(context), rlm.runner.host, rlm.runner.loaded, rlm.home) if context else None
    if context and len(context) == 1 and not Path(context[0]).is_dir():
        loaded = Path(context[0]).resolve()  # kept as a path: a resumed session reads the file again
    if resume is not None:
        session_file(rlm.home, resume)  # an id that is not a session's is refused first, whatever else is wrong
    for given in (model, sub_model):
        if given:
            rlm.check(model=given)  # a model that cannot be loaded is refused now, not at the first question
    if environment:
        rlm.runner.host.environments().get(environment)  # an unknown name is refused now too (exit 2)
    if framework and framework != "native":
        rlm.runner.host.frameworks().get(framework)
    session = rlm.session(loaded, resume=resume)
    using = f"model={session.using('model')} sandbox={_sandbox(session, rlm)}"  # the flags, else what it ran with
    if resume and isinstance(session.context, Path):
        using += f" context={session.context}"  # the file the session names is read again: say which
    typer.echo(f"chat {session.id}" + (f" (resumed, {len(session.turns)} turns)" if resume else "")
               + f"  {using}  {HELP}", err=True)  # fmt: skip
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            typer.echo(f"\nsession saved: rlm chat --resume {session.id}", err=True)
            return
        if not line:
            continue
        if line.startswith("/"):
            if not _guarded(_command, line, session, rlm):
                typer.echo(f"session saved: rlm chat --resume {session.id}", err=True)
                return
            continue
        _guarded(_turn, session, line, quiet or state.log_json)


chat = command(chat_session, "chat")


def _guarded(action, *args) -> bool:
    """Run a turn or a command; an error is shown (``error:`` / ``hint:``) and the session goes on."""
    from rlm_host import logs
    from rlm_host.errors import RlmError

    try:
        return action(*args) is not False
    except RlmError as exc:
        logs.say(f"error: {exc.message}" + (f"\nhint: {exc.hint}" if exc.hint else ""), event="chat error",
                 level="error", error=exc.message)  # fmt: skip
    except Exception as exc:  # a bug must not lose the conversation: it is saved after every turn
        logs.say(f"error: {type(exc).__name__}: {exc}\nhint: the session goes on; rlm --debug chat … shows more",
                 event="chat error", level="error", error=str(exc))  # fmt: skip
    return True


def _turn(session, question: str, quiet: bool) -> None:
    from rlm_host.cli.run_cmd import for_stdout

    on_event = None
    if not quiet:
        from rlm_host.cli.live import LiveView

        on_event = LiveView()
    try:
        result = session.ask(question, on_event=on_event)
    except KeyboardInterrupt:
        typer.echo("(turn cancelled)", err=True)
        return
    finally:
        if on_event is not None:
            on_event.close()
    if result.termination_reason == "cancelled":
        typer.echo("(turn cancelled)", err=True)
    elif result.final_response is not None:
        typer.echo(for_stdout(f"rlm> {result.final_response}"))
    else:
        typer.echo(for_stdout(f"rlm> (no answer: {result.termination_reason}"
                              f"{': ' + result.error if result.error else ''})"))


def _command(line: str, session, rlm) -> bool:
    """Run one /command; False means the session ends."""
    name, _, argument = line.partition(" ")
    if name in ("/exit", "/quit"):
        return False
    if name == "/context":
        from rlm_host.context import describe_context

        if isinstance(session.context, Path):
            typer.echo(f"context: {session.context} ({session.context.stat().st_size:,} bytes, read at every turn)")
            return True
        meta = describe_context(session.context)
        typer.echo(f"context: {meta.get('type')}, {meta.get('total_chars', 0):,} characters"
                   + (f", {meta.get('documents')} documents" if meta.get("documents") else ""))  # fmt: skip
    elif name == "/model":
        if argument.strip():
            rlm.check(model=argument.strip())  # raises: the model stays as it was
            session.options["model"] = argument.strip()
            typer.echo(f"model from the next turn: {argument.strip()}")
        else:
            typer.echo(f"model: {session.using('model') or 'auto'}")
    elif name == "/vars":
        kept = ", ".join(f"{k} ({type(v).__name__})" for k, v in sorted(session.variables.items())) or "none"
        typer.echo(f"kept: {kept}" + (f"\nnot kept: {', '.join(session.dropped)}" if session.dropped else ""))
    elif name == "/save":
        typer.echo(f"saved: {session.save()}  (rlm chat --resume {session.id})")
    elif name == "/help":
        typer.echo(HELP)
    else:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, n=1)
        typer.echo(f"unknown command {name}" + (f" (did you mean {close[0]}?)" if close else "") + f"; {HELP}")
    return True


def _sandbox(session, rlm) -> str:
    """The sandbox the next turn uses; for ``auto``, the runtime it picks here."""
    from rlm_host.engine.sandbox_plan import choose_sandbox
    from rlm_host.errors import RlmError

    name = session.using("sandbox") or "auto"
    if name != "auto":
        return name
    try:
        return f"auto ({choose_sandbox(rlm.runner.host, rlm.runner.loaded, 'auto').name})"
    except RlmError:
        return "auto (none ready)"

