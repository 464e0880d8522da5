"""``rlm runs list``, ``show``, ``compare``, ``export`` and ``fork``: the saved runs under ``<home>/runs``; ``rlm runs
active`` and ``cancel``: this user's runs in progress on this machine, whatever folder they run in (the registry in
``~/.local/state/rlm/active``, ``rlm_host.trajectory.active``).

What these commands show comes from runs: tasks, models' replies, code, errors, registry entries anyone could
write. Every line meant for a person goes through ``say`` (control characters shown, never sent: C0, DEL and C1,
so no ESC or CSI sequence redraws the terminal); JSON is printed by ``echo_json`` (escaped, not raw).

``rlm runs fork RUN --at STEP [run options]`` is a new run that takes RUN's first STEP steps as recorded, then goes
on with the settings given (another model, sampling, limits…). The recorded replies answer the replayed steps (no
model is called for them) and their code runs again in a new sandbox, rebuilding the REPL state; a step that does
not come out as recorded stops the run, naming it. The new run starts from RUN's task, context and settings — a
record read back from disk, so its settings are screened as an untrusted project file's are (a server address, a
non-boundary sandbox, your functions… are left out unless given again as flags) — and carries the labels
``fork_of`` and ``fork_at``; ``rlm runs compare RUN NEW`` lines the two up from the fork."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from typer.core import TyperArgument, TyperOption

from rlm_host import CommandServices, HostServices, InputError
from rlm_host.sdk.commands import (ContextsCommand, apply_run_flags, clip, echo, echo_json, run_and_show, run_params,
                                   say)
from rlm_host.sdk.context import ContextFiles
from rlm_host.sdk.embedding import ActiveRuns, Replay, RunSettings, RunStore, get_host, screen, select_runs
from rlm_runs.fork import FORK_AT, FORK_OF, fork_wrapper

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True,
                  help="Saved runs (list, show one with every step, compare two, export one, fork one) and runs in "
                  "progress (active, cancel).")
AS_JSON = typer.Option(False, "--json", help="Print JSON.")
RUN_ID = typer.Argument(..., help="A run id, a unique prefix of one, 'latest', or a .jsonl path.")


def store_of() -> RunStore:
    """The saved runs of the effective run home (relative paths are relative to the cwd)."""
    return RunStore(CommandServices.of().home)


@app.command("list")
def list_runs(
    as_json: bool = AS_JSON,
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="Show at most N runs (0: all)."),
    filters: Optional[list[str]] = typer.Option(None, "--filter", "-F", help="KEY=VALUE, repeatable: model, "
                                                "environment, framework (globs), label (KEY or KEY=VALUE), status, "
                                                "since, until (ISO dates)."),
) -> None:
    """Saved runs, newest first: id, start, outcome, steps, reward, tokens, cost and task."""
    store = store_of()
    summaries = select_runs(store.list_runs(), filters or [])
    shown = summaries[:limit] if limit else summaries
    if as_json:
        return echo_json([s.model_dump(mode="json") for s in shown])
    if not summaries:
        return echo(f"no saved runs in {store.runs_dir}" + (" match the filters" if filters else ""))
    echo(f"{'RUN ID':<35} {'STARTED (UTC)':<16} {'STATUS':<12} {'STEPS':>5} {'REWARD':>7} {'TOKENS':>8} "
         f"{'COST':>8}  TASK")
    for s in shown:
        started = s.started.strftime("%Y-%m-%d %H:%M") if s.started else "?"
        tokens = f"{s.tokens:,}" if s.tokens is not None else "-"
        cost = f"${s.cost:.4f}" if s.cost is not None else "-"
        echo(f"{s.run_id:<35} {started:<16} {s.termination_reason:<12} {s.steps:>5} {s.total_reward:>7.2f} "
             f"{tokens:>8} {cost:>8}  {clip(s.task, 50)}")
    if len(shown) < len(summaries):
        echo(f"… {len(summaries) - len(shown)} older runs (--limit 0 shows all)")
    for s in shown:
        if s.problem:
            echo(f"unreadable: {s.path}: {s.problem}")


@app.command("active")
def active(
    as_json: bool = AS_JSON,
    prune: bool = typer.Option(False, "--prune", help="Remove the entries of dead runs (their process is gone)."),
) -> None:
    """Your runs in progress on this machine, in any process and any folder: id, status, process, start,
    environment, command, task and the run home each writes to. A run whose process died is shown as dead (its
    trajectory has no final event; `--prune` forgets it, as the next run to start does)."""
    registry = ActiveRuns()
    pruned = registry.prune() if prune else []
    runs = registry.list()
    if as_json:
        return echo_json([run.model_dump(mode="json") for run in runs])
    for run in pruned:
        echo(f"pruned {run.run_id} (process {run.pid} is gone)")
    if not runs:
        return echo("no active runs")
    echo(f"{'RUN ID':<35} {'STATUS':<10} {'PID':>7} {'STARTED (UTC)':<19} {'ENV':<10} {'COMMAND':<16} "
         f"{'TASK':<40} HOME")
    for run in runs:
        echo(f"{run.run_id:<35} {run.status:<10} {run.pid:>7} {run.started:%Y-%m-%d %H:%M:%S} "
             f"{run.environment:<10} {run.command[:16]:<16} {clip(run.task, 40):<40} {run.home or '?'}")
    if dead := sum(run.status == "dead" for run in runs):
        echo(f"{dead} dead: their process ended without closing the run (`rlm runs active --prune` forgets them)")


@app.command("cancel")
def cancel(
    run_id: str = typer.Argument("", help="The run to stop: an id or a unique prefix (`rlm runs active`)."),
    every: bool = typer.Option(False, "--all", help="Stop every run of yours in progress on this machine, whatever "
                               "folder it runs in."),
    wait: float = typer.Option(10.0, "--wait", min=0, help="Seconds to wait for the runs to end (0: do not wait)."),
) -> None:
    """Stop your runs in any process and any folder: each stops at its next check (a model call in progress is
    abandoned), its trajectory ends `cancelled` and its sandbox is released."""
    if bool(run_id) == every:
        raise InputError("give a run id or --all (not both)")
    registry = ActiveRuns()
    if not (asked := registry.cancel_all() if every else [registry.cancel(run_id)]):
        return echo("no active runs")
    if not every and asked[0].status == "dead":
        return echo(f"{asked[0].run_id} was not running (process {asked[0].pid} is gone): its entry is removed")
    left = set(registry.wait([run.run_id for run in asked], wait)) if wait else {run.run_id for run in asked}
    for run in asked:
        if run.run_id not in left:
            echo(f"cancelled {run.run_id}")
        else:
            echo(f"asked {run.run_id} to stop" + (f"; still running after {wait:g} s (process {run.pid})"
                                                 if wait else ""))
    if left and wait:
        raise typer.Exit(1)


@app.command("compare")
def compare(
    run_a: str = typer.Argument(..., help="The reference run (id, unique prefix, 'latest', or a .jsonl path)."),
    run_b: str = typer.Argument(..., help="The run compared with it."),
    as_json: bool = AS_JSON,
) -> None:
    """Where two runs' steps first diverge (action, code, success), and the deltas of reward, tokens, cost, time
    and efficiency (reward per 1,000 tokens: total reward × 1000 / total tokens)."""
    from rlm_runs.compare import compare_runs, render_comparison

    store = store_of()
    comparison = compare_runs(Replay(store.load(run_a)), Replay(store.load(run_b)))
    if as_json:
        return echo_json(comparison.model_dump(mode="json"))
    echo(render_comparison(comparison))


@app.command("show")
def show(run_id: str = RUN_ID, as_json: bool = typer.Option(False, "--json", help="Print the "
         "RunResult and every event as JSON.")) -> None:
    """One saved run: its summary, then every root step with its sub-calls and child runs."""
    from rlm_host.sdk.observability import trace_id_for
    from rlm_runs.render import render_step, render_summary

    store = store_of()
    path = store.resolve(run_id)
    events = store.load(path)
    replay = Replay(events)
    if as_json:
        result = replay.result.model_dump(mode="json") if replay.result else None
        return echo_json({"run_id": replay.root.run_id, "trace_id": trace_id_for(replay.root.run_id), "path": str(path),
                          "result": result, "events": [e.model_dump(mode="json") for e in events]})
    echo(render_summary(replay))
    for step in replay.steps:
        echo("\n" + render_step(step, total=len(replay.steps)))


@app.command("export")
def export(
    run_id: str = RUN_ID,
    fmt: str = typer.Option("json", "--format", "-f", help="An exporter (`rlm plugins list`): json, this run's "
                            "events as one JSON array, or one a plugin registers."),
    output: str = typer.Option("-", "--output", "-o", help="The file to write ('-': standard output)."),
) -> None:
    """One saved run in another format: a registered exporter's (--format), or a JSON array of its events (json)."""
    spec = get_host().exporters().get(fmt)
    store = store_of()
    events = store.load(run_id)
    buffer = io.StringIO()
    spec.create(None, HostServices(home=store.home))(events, buffer)
    if output in ("", "-"):
        sys.stdout.write(buffer.getvalue())
        return
    target = Path(output).expanduser()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(buffer.getvalue(), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    say(f"wrote {target} ({spec.name}, {len(events)} events)", event="export", path=str(target), format=spec.name)


def fork_run(run_id: str, at: int, context: tuple[str, ...], as_json: bool, quiet: bool, **flags: Any) -> None:
    """Fork a saved run: replay its first --at steps as recorded, then go on with the settings given."""
    loaded = CommandServices.of().settings
    assert loaded is not None  # a command of rlm always has its settings
    replay = Replay(RunStore(loaded.home).load(run_id))
    source, steps = replay.root.run_id, len(replay.root.steps)
    if steps == 0:
        raise InputError(f"run {source} has no step to fork from")
    if not 1 <= at <= steps:
        raise InputError(f"run {source} has {steps} step(s): --at takes 1 to {steps}, not {at}")
    start = replay.root.start
    kept = recorded_settings(start.get("settings"), source)
    loaded = loaded.with_run(kept, {name: f"run {source}" for name in kept})
    loaded = apply_run_flags(loaded, flags)
    labels = {**loaded.settings.run.labels, FORK_OF: source, FORK_AT: str(at)}
    loaded = loaded.with_run({"labels": labels}, {"labels": "rlm runs fork"})
    value = ContextFiles(tuple(context)) if context else recorded_context(start.get("context"), source)
    wrap, watch = fork_wrapper(replay, at)
    taken = f"steps 1-{at} are" if at > 1 else "step 1 is"
    say(f"fork of {source}: {taken} taken as recorded (their code runs again), then "
             f"{loaded.settings.run.model} goes on", event="fork", run=source, at=at)
    run_and_show(loaded, str(start.get("task") or ""), value, as_json, quiet, connectors={"wrap": wrap}, watch=watch)


def recorded_settings(settings: Any, source: str) -> dict[str, Any]:
    """The run options of a recorded run that may apply again: each screened as an untrusted project file's
    setting would be (one warning names what is left out, and why)."""
    if not isinstance(settings, dict):
        return {}
    defaults = RunSettings().model_dump(mode="json")
    entries = [(f"run.{name}", value, source) for name, value in settings.items()
               if name in RunSettings.model_fields and value != defaults.get(name)]
    kept, ignored = screen(entries, Path.cwd(), get_host())
    if ignored:
        left = "; ".join(f"{item.key.removeprefix('run.')} ({item.reason})" for item in ignored)
        say(f"warning: settings of {source} not taken again (give them as flags if you mean them): {left}",
                 event="fork settings", level="warning")
    return {key.removeprefix("run."): value for key, value, _ in kept}


def recorded_context(meta: Any, source: str) -> Optional[Any]:
    """The recorded run's context again: none, or the files it was read from when they are still in this folder
    (a path in a record is not followed elsewhere); else an InputError asking for --context."""
    if not isinstance(meta, dict) or meta.get("type") in (None, "none"):
        return None
    files = meta.get("files")
    paths = [Path(str(f)) for f in files] if isinstance(files, list) else []
    if paths and all(p.is_file() and p.resolve().is_relative_to(Path.cwd().resolve()) for p in paths):
        return ContextFiles(tuple(str(p) for p in paths))
    shown = f"{meta.get('type')}, {meta.get('total_chars', 0):,} characters"
    raise InputError(f"run {source} had a context ({shown}) that cannot be read again here",
                     hint="give it again: rlm runs fork RUN --at STEP --context FILE")


#: The ``runs`` command of ``rlm`` (``rlm_host.default_plugins.commands``): the commands above, and ``fork``, which
#: takes every run option as a flag as ``rlm run`` does.
runs_group = typer.main.get_group(app)
runs_group.add_command(ContextsCommand(name="fork", callback=fork_run, rich_markup_mode=None, params=[
    TyperArgument(param_decls=["run_id"], required=True, metavar="RUN", help="A run id, a unique prefix, 'latest' or a "
                  ".jsonl path."),
    TyperOption(param_decls=["--at", "at"], type=int, required=True, metavar="STEP",
                help="The last step taken as recorded (1 to the run's steps)."),
    *run_params(context="The context, when the run's files are not in this folder any more.")],
    help=(fork_run.__doc__ or "").split("\n")[0]), "fork")
