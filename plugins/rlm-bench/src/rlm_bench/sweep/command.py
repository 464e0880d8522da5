"""``rlm bench sweep SWEEP.toml``: a grid of benchmark runs on this machine or a Ray cluster (``rlm_bench.sweep``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from rlm_host import CommandServices, InputError
from rlm_host.sdk.commands import say, terminal_safe

#: Tokens one root step takes at most, for the upper-bound estimate when no earlier run of a preset is known.
STEP_INPUT_TOKENS, STEP_OUTPUT_TOKENS = 4_000, 600


def sweep(
    ctx: typer.Context,
    file: Optional[Path] = typer.Argument(None, help="The sweep file (TOML: [sweep] axes, [run], [[override]], "
                                          "[bench.ray])."),
    executor: str = typer.Option("local", "--executor", "-e", help="local (threads or worker processes of this "
                                 "machine) or ray (tasks on a Ray cluster)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray: the cluster to join (auto, "
                                          "ray://host:port, host:port); default [bench.ray] address, else a "
                                          "local Ray started for the sweep."),
    concurrency: int = typer.Option(4, "--concurrency", "-j", min=1, max=1024, help="local: cases at once."),
    processes: int = typer.Option(1, "--processes", min=1, max=256, help="local: forked worker processes sharing "
                                  "the -j cases, on threads of their own (1: threads of this process). Linux."),
    resume: Optional[str] = typer.Option(None, "--resume", help="Run what an earlier sweep (its id, or latest) "
                                         "has not finished."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the expanded grid, the case count and a cost "
                                 "estimate; run nothing."),
    max_cost: Optional[float] = typer.Option(None, "--max-cost", min=0.0, help="No new case starts once the "
                                             "sweep has spent this many USD (running cases finish)."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Likewise for the sweep's tokens."),
    as_json: bool = typer.Option(False, "--json", help="Print the sweep record (or the dry run) as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Run a sweep: every point of the grid a benchmark (as `rlm bench run` makes one), every case a task."""
    from rlm_bench.sweep import SweepDriver, SweepStore, plan_sweep, resume_plan, stored_form
    from rlm_bench.sweep.file import load_sweep
    from rlm_host.sdk.embedding import RLMRunner

    if executor not in ("local", "ray"):
        raise InputError(f"unknown executor {executor!r}", hint="choose local or ray")
    if (file is None) == (resume is None):
        raise InputError("give a sweep file, or --resume SWEEP_ID", hint="rlm bench sweep sweep.toml")
    services = CommandServices.of(ctx)
    runner = RLMRunner(loaded=services.settings)
    store = SweepStore(runner.home)
    if resume is not None:
        plan = resume_plan(store, resume, executor=executor, config_file=services.config_file,
                           trust=services.trust_config, host=runner.host)
        spec_ray = plan.record.spec.get("bench", {}).get("ray", {})
    else:
        assert file is not None
        spec = load_sweep(file)
        plan = plan_sweep(spec, file.resolve(), runner, executor=executor, config_file=services.config_file,
                          trust=services.trust_config)
        spec_ray = spec.bench.ray.model_dump()
    if dry_run:
        _print_dry_run(plan, runner, store, as_json)
        return
    chosen = _executor(executor, address, spec_ray, concurrency, processes)
    display = None if quiet else _Display(plan.record.sweep_id, chosen.name)
    driver = SweepDriver(store, chosen, max_cost=max_cost, max_tokens=max_tokens,
                         listener=display.update if display else None)
    try:
        record = driver.run(plan)
    finally:
        if display:
            display.stop()
    if as_json:
        typer.echo(json.dumps(stored_form(record), indent=2, ensure_ascii=False))
    else:
        _print_outcome(record, store)
    if record.status == "lost":
        raise typer.Exit(1)


def _executor(name: str, address: Optional[str], ray_options: dict[str, Any], concurrency: int,
              processes: int) -> Any:
    if name == "local":
        from rlm_bench.sweep import LocalExecutor

        return LocalExecutor(concurrency=concurrency, processes=processes)
    from rlm_bench.sweep.ray_executor import RayExecutor  # imports Ray: without it, an error with the install command

    return RayExecutor.connect(address or ray_options.get("address"), ray_options)


def _print_dry_run(plan: Any, runner: Any, store: Any, as_json: bool) -> None:
    rows = []
    for point in plan.record.points:
        estimate, how = _estimate(plan.manifests[point.benchmark_id], point.cases, runner, store)
        rows.append({"point": point.key, "benchmark_id": point.benchmark_id, "cases": point.cases,
                     "cost_estimate": estimate, "estimate_from": how})
    known = [row["cost_estimate"] for row in rows if row["cost_estimate"] is not None]
    total = {"points": len(rows), "cases": sum(row["cases"] for row in rows),
             "cost_estimate": round(sum(known), 4) if known else None,
             "unpriced_points": sum(row["cost_estimate"] is None for row in rows)}
    if as_json:
        typer.echo(json.dumps({"sweep": plan.record.name, "points": rows, "total": total}, indent=2))
        return
    width = max([len(row["point"]) for row in rows] + [5])
    lines = [f"{'POINT':<{width}}  {'CASES':>5}  {'EST. COST':>10}  FROM"]
    for row in rows:
        cost = f"${row['cost_estimate']:.4f}" if row["cost_estimate"] is not None else "?"
        lines.append(f"{row['point']:<{width}}  {row['cases']:>5}  {cost:>10}  {row['estimate_from']}")
    cost = f"${total['cost_estimate']:.4f}" if total["cost_estimate"] is not None else "unknown"
    unpriced = f" ({total['unpriced_points']} point(s) without a price)" if total["unpriced_points"] else ""
    lines.append(f"{total['points']} points, {total['cases']} cases, estimated cost {cost}{unpriced}; nothing ran "
                 "(--dry-run)")
    typer.echo(terminal_safe("\n".join(lines)))


def _estimate(manifest: Any, cases: int, runner: Any, store: Any) -> tuple[Optional[float], str]:
    """A point's cost: the mean cost per case of earlier benchmarks of the same preset, mode, model and framework
    (how they really went), else an upper bound at every case's step limit from the model's price, else None."""
    from rlm_bench.store import load_summary
    from rlm_host.sdk.models import PriceTable

    model = manifest.model or runner.loaded.settings.run.model
    costs = []
    for path in store.bench.summaries():
        try:
            earlier = load_summary(path)
        except Exception:  # noqa: BLE001 - an unreadable summary is no evidence
            continue
        if (earlier.preset, earlier.mode, earlier.framework, earlier.model) == (manifest.preset, manifest.mode,
                                                                                 manifest.framework, model):
            costs += [case.cost for case in earlier.cases if case.cost is not None]
    if costs:
        return round(sum(costs) / len(costs) * cases, 4), f"{len(costs)} earlier case(s)"
    price = PriceTable.from_settings(runner.loaded.settings).lookup(model) if model and model != "auto" else None
    if price is None:
        return None, "no price known"
    steps = runner.loaded.settings.run.max_steps
    per_case = price.cost(steps * STEP_INPUT_TOKENS, steps * STEP_OUTPUT_TOKENS)
    return round(per_case * cases, 4), f"upper bound: {steps} steps × {STEP_INPUT_TOKENS}+{STEP_OUTPUT_TOKENS} tokens"


def _print_outcome(record: Any, store: Any) -> None:
    done = sum(len(store.bench.load_cases(p.benchmark_id)) for p in record.points)
    total = sum(p.cases for p in record.points)
    say(f"sweep {record.sweep_id}: {record.status}, {done} of {total} cases, ${record.spent_cost:.4f}, "
        f"{record.spent_tokens} tokens", event="sweep end", sweep_id=record.sweep_id, status=record.status, done=done,
        total=total, cost=record.spent_cost, tokens=record.spent_tokens)
    if record.stopped:
        say(f"stopped: {record.stopped}; finish it with: rlm bench sweep --resume {record.sweep_id}",
            event="sweep stopped", reason=record.stopped)
    for node, stats in sorted(record.nodes.items()):
        say(f"  node {node}: {stats.cases} cases ({stats.failed} failed)", event="sweep node", node=node,
            cases=stats.cases, failed=stats.failed)
    say(f"record: {store.path(record.sweep_id)}", event="sweep record", path=str(store.path(record.sweep_id)))


class _Display:
    """A live progress bar on stderr: done / running / failed, spend so far and cases per minute per node; a case
    that failed is a notice line (``say``)."""

    def __init__(self, sweep_id: str, executor: str) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self.task: Any = None  # the description as text: "[host: 3.0/min]" is no markup
        self.label = f"{sweep_id} ({executor})"

    def update(self, kind: str, progress: Any, result: Any) -> None:
        import time

        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=progress.total, completed=progress.done)
        minutes = max((time.monotonic() - progress.started) / 60, 1e-9)
        nodes = "  ".join(f"{node}: {count / minutes:.1f}/min" for node, count in sorted(progress.per_node.items()))
        text = (f"{self.label}  running {progress.running}  failed {progress.failed}  ${progress.spent:.4f}"
                + (f"  [{nodes}]" if nodes else ""))
        self.bar.update(self.task, completed=progress.done, description=text)
        if kind == "case" and result is not None and result.status == "error":
            say(f"✗ {result.case_id}: {result.error}", event="sweep case failed", case_id=result.case_id)

    def stop(self) -> None:
        if self.task is not None:
            self.bar.stop()
