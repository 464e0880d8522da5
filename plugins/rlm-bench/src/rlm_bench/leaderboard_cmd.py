"""``rlm leaderboard``: rank the saved benchmark summaries under ``<home>/benchmarks`` by a metric."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from rlm_host import CommandServices
from rlm_host.sdk.commands import say

app = typer.Typer(rich_markup_mode=None, add_completion=False)


@app.command("leaderboard")
def leaderboard(
    ctx: typer.Context,
    metric: Optional[str] = typer.Option(
        None, "--metric", "-m",
        help="Benchmarks: accuracy (the default; the mean score, alias: score), reward, completion, efficiency (mean "
        "score per 1,000 tokens) (higher is better); steps, tokens, cost, duration (lower is better). Runs: reward "
        "(the default), accuracy (higher is better); tokens, cost, seconds, steps (lower is better).",
    ),
    filters: Optional[List[str]] = typer.Option(
        None, "--filter", "-F",
        help="KEY=VALUE, repeatable. Benchmarks: preset, model, mode, environment, sandbox, tag, min_cases, since, "
        "until, min_accuracy, max_accuracy, min_reward, max_reward, min_completion. Runs: those of `rlm runs list "
        "--filter` (model, environment, framework, label, status, since, until).",
    ),
    runs: bool = typer.Option(False, "--runs", help="Rank individual saved runs (`rlm runs list`) instead of "
                              "benchmarks: a run's accuracy is its benchmark case's score or its `expected` label "
                              "matched."),
    limit: int = typer.Option(0, "--limit", "-n", min=0, help="Show at most N rows (0: all)."),
    as_json: bool = typer.Option(False, "--json", help="Print the ranked rows and statistics as JSON."),
    as_csv: bool = typer.Option(False, "--csv", help="Print the ranked rows as CSV."),
    as_markdown: bool = typer.Option(False, "--markdown", help="Print a markdown table with statistics."),
) -> None:
    """Rank saved benchmarks: one row per benchmark with mean score, reward, completion, steps, tokens, cost,
    latency and efficiency (EFF: mean score per 1,000 tokens)."""
    from rlm_bench.leaderboard import LeaderboardError, check_metric, load_summaries, parse_filters, rank, render
    from rlm_bench.store import BenchStore

    chosen = [name for name, on in (("json", as_json), ("csv", as_csv), ("markdown", as_markdown)) if on]
    if len(chosen) > 1:
        raise LeaderboardError("choose one of --json, --csv, --markdown")
    if runs:
        _rank_runs(ctx, metric or "reward", filters or [], limit, chosen[0] if chosen else "table")
        return
    name = check_metric(metric or "accuracy")
    where = parse_filters(filters or [])
    store = BenchStore(CommandServices.of(ctx).home)
    paths = store.summaries()

    def warn(path: Path, message: str) -> None:
        say(f"warning: skipped {path.name}: {message}", event="leaderboard skipped", level="warning",
            file=str(path))

    rows = rank(load_summaries(paths, on_error=warn), name, where, limit or None)
    fmt = chosen[0] if chosen else "table"
    if fmt == "table" and not rows:
        what = "no saved benchmarks" if not paths else "no benchmark matches the filters"
        typer.echo(f"{what} under {store.root}")
        return
    typer.echo(render(rows, name, fmt), nl=False)


def _rank_runs(ctx: typer.Context, metric: str, filters: List[str], limit: int, fmt: str) -> None:
    """``rlm leaderboard --runs``: the saved runs of the home, filtered as ``rlm runs list`` does, ranked."""
    from rlm_bench.run_board import check_run_metric, rank_runs, render_runs, scorer
    from rlm_bench.store import BenchStore
    from rlm_host.sdk.embedding import RunStore, select_runs

    name = check_run_metric(metric)
    home = CommandServices.of(ctx).home
    summaries = select_runs([s for s in RunStore(home).list_runs() if s.termination_reason != "unreadable"], filters)
    rows = rank_runs(summaries, name, scorer(BenchStore(home).load_cases), limit or None)
    if fmt == "table" and not rows:
        typer.echo(f"no saved run{' matches the filters' if filters else 's'} under {home / 'runs'}")
        return
    typer.echo(render_runs(rows, name, fmt), nl=False)
