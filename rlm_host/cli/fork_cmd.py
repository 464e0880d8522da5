"""``rlm runs fork RUN --at STEP [run options]``: a new run that takes RUN's first STEP steps as recorded, then goes
on with the settings given (another model, sampling, limits…).

The recorded replies answer the replayed steps (no model is called for them) and their code runs again in a new
sandbox, rebuilding the REPL state; a step that does not come out as recorded stops the run, naming it. The new
run starts from RUN's task, context and settings — a record read back from disk, so its settings are screened as
an untrusted project file's are (a server address, a non-boundary sandbox, your functions… are left out unless
given again as flags) — and carries the labels ``fork_of`` and ``fork_at``; ``rlm runs compare RUN NEW`` lines
the two up from the fork.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from typer import _click as click
from typer.core import TyperArgument, TyperOption

from rlm_host import logs
from rlm_host.cli import run_flags
from rlm_host.cli.context_args import ContextsCommand
from rlm_host.cli.run_cmd import cli_state, run_and_show, run_params
from rlm_host.config.schema import RunSettings
from rlm_host.config.trust import screen
from rlm_host.context import ContextFiles
from rlm_host.errors import InputError
from rlm_host.plugins import get_host
from rlm_host.trajectory import Replay, RunStore
from rlm_host.trajectory.fork import FORK_AT, FORK_OF, fork_wrapper


def fork_run(run_id: str, at: int, context: tuple[str, ...], as_json: bool, quiet: bool, **flags: Any) -> None:
    """Fork a saved run: replay its first --at steps as recorded, then go on with the settings given."""
    loaded = cli_state().settings()
    replay = Replay(RunStore(loaded.home).load(run_id))
    source, steps = replay.root.run_id, len(replay.root.steps)
    if steps == 0:
        raise InputError(f"run {source} has no step to fork from")
    if not 1 <= at <= steps:
        raise InputError(f"run {source} has {steps} step(s): --at takes 1 to {steps}, not {at}")
    start = replay.root.start
    kept = recorded_settings(start.get("settings"), source)
    loaded = loaded.with_run(kept, {name: f"run {source}" for name in kept})
    loaded = run_flags.apply(loaded, flags)
    labels = {**loaded.settings.run.labels, FORK_OF: source, FORK_AT: str(at)}
    loaded = loaded.with_run({"labels": labels}, {"labels": "rlm runs fork"})
    value = ContextFiles(tuple(context)) if context else recorded_context(start.get("context"), source)
    wrap, watch = fork_wrapper(replay, at)
    taken = f"steps 1-{at} are" if at > 1 else "step 1 is"
    logs.say(f"fork of {source}: {taken} taken as recorded (their code runs again), then "
             f"{loaded.settings.run.model} goes on", event="fork", run=source, at=at)  # fmt: skip
    run_and_show(loaded, str(start.get("task") or ""), value, as_json, quiet, connectors={"wrap": wrap}, watch=watch)


def recorded_settings(settings: Any, source: str) -> dict[str, Any]:
    """The run options of a recorded run that may apply again: each screened as an untrusted project file's
    setting would be (one warning names what is left out, and why)."""
    if not isinstance(settings, dict):
        return {}
    defaults = RunSettings().model_dump(mode="json")
    entries = [(f"run.{name}", value, source) for name, value in settings.items()
               if name in RunSettings.model_fields and value != defaults.get(name)]  # fmt: skip
    kept, ignored = screen(entries, Path.cwd(), get_host())
    if ignored:
        left = "; ".join(f"{item.key.removeprefix('run.')} ({item.reason})" for item in ignored)
        logs.say(f"warning: settings of {source} not taken again (give them as flags if you mean them): {left}",
                 event="fork settings", level="warning")  # fmt: skip
    return {key.removeprefix("run."): value for key, value, _ in kept}


def recorded_context(meta: Any, source: str) -> Optional[Any]:
    """The recorded run's context again: none, or the files it was read from when they are still in this folder
    (a path in a record is not followed elsewhere); else an InputError asking for --context."""
    if not isinstance(meta, dict) or meta.get("type") in (None, "none"):
        return None
    files = found if isinstance(found := meta.get("files"), list) else []
    here = Path.cwd().resolve()
    paths = [Path(str(f)) for f in files]
    if paths and all(p.is_file() and p.resolve().is_relative_to(here) for p in paths):
        return ContextFiles(tuple(str(p) for p in paths))
    shown = f"{meta.get('type')}, {meta.get('total_chars', 0):,} characters"
    raise InputError(f"run {source} had a context ({shown}) that cannot be read again here",
                     hint="give it again: rlm runs fork RUN --at STEP --context FILE")  # fmt: skip


def command() -> click.Command:
    """``rlm runs fork``: the run, ``--at``, ``--context``, the output flags and every run option (``run_params``)."""
    params = [
        TyperArgument(param_decls=["run_id"], required=True, metavar="RUN", help="A run id, a unique prefix, "
                      "'latest' or a .jsonl path."),
        TyperOption(param_decls=["--at", "at"], type=int, required=True, metavar="STEP",
                    help="The last step taken as recorded (1 to the run's steps)."),
        *run_params(context="The context, when the run's files are not in this folder any more."),
    ]  # fmt: skip
    return ContextsCommand(name="fork", callback=fork_run, params=params, help=(fork_run.__doc__ or "").split("\n")[0],
                           rich_markup_mode=None)  # fmt: skip
