"""``rlm bench``: list presets, run a benchmark (resumable), compare two with CI gates, report (markdown, csv,
json or a self-contained HTML page with charts), judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, List, Optional

import typer

from rlm_host import CommandServices, ConfigError, InputError, RlmError
from rlm_host.sdk.embedding import RLMRunner
from rlm_host.sdk.commands import apply_run_flags, json_for_terminal, run_option, say, terminal_safe
from rlm_host.sdk.models import resolve_connector

app = typer.Typer(rich_markup_mode=None, add_completion=False, no_args_is_help=True)

EXIT_GATE_FAILED = 1


@app.callback()
def bench() -> None:
    """Benchmarks with real data and answers: list, run, compare (CI gates), report, judge."""


def _home(ctx: typer.Context) -> Path:
    return CommandServices.of(ctx).home


@app.command("list", short_help="List the benchmark presets: cases, source, description.")
def list_presets(
    ctx: typer.Context,
    pack: Optional[List[Path]] = typer.Option(None, "--pack",
                                              help="Also list the presets of this YAML/JSON/JSONL file."),
    as_json: bool = typer.Option(False, "--json", help="Print every preset with its cases as JSON."),
) -> None:
    """Benchmark presets: name, cases, where they come from, description."""
    from rlm_bench.catalog import list_presets as find_all

    runner = RLMRunner(loaded=CommandServices.of(ctx).settings)
    presets = find_all(runner.host, [str(p) for p in pack or []], loaded=runner.loaded)
    if as_json:
        payload = [{"name": p.name, "description": p.description, "source": p.source,
                    "cases": [c.model_dump(mode="json") for c in p.cases]} for p in presets]
        typer.echo(json_for_terminal(payload))
        return
    if not presets:
        typer.echo("no benchmark presets registered (install a pack, or pass --pack FILE)")
        return
    typer.echo(f"{'PRESET':<24} {'CASES':>5}  {'SOURCE':<10} DESCRIPTION")
    for p in presets:
        source = p.source if len(p.source) <= 10 else "…" + p.source[-9:]
        typer.echo(f"{p.name:<24} {len(p.cases):>5}  {source:<10} {p.description}")


@app.command("run", short_help="Run a preset, score every answer, save a summary (resumable).")
def run(
    ctx: typer.Context,
    preset: Optional[str] = typer.Option(None, "--preset", "-p", help="Preset to run (`rlm bench list`)."),
    pack: Optional[List[Path]] = typer.Option(None, "--pack", help="A YAML/JSON/JSONL pack file holding the preset."),
    mode: str = typer.Option("native", "--mode", help="native (the RLM loop), direct-llm (one call, the baseline) "
                             "or harness (the RLM loop in the harness environment: rlm-harness)."),
    framework: Optional[str] = typer.Option(None, "--framework", help="'native' or a framework; several "
                                            "separated by commas run the preset once each and compare them."),
    env: Optional[str] = run_option("environment"),
    model: Optional[str] = run_option("model"),
    sub_model: Optional[str] = run_option("sub_model"),
    sandbox: Optional[str] = run_option("sandbox"),
    judge_model: Optional[str] = typer.Option(None, "--judge-model", help="Model judging cases scored by 'judge'."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", min=1, help="Run only the first N cases."),
    concurrency: int = typer.Option(1, "--concurrency", "-j", min=1, max=64, help="Cases run at once."),
    processes: Optional[int] = typer.Option(None, "--processes", min=1, max=64, help="Worker processes sharing the "
                                            "cases (default: one per core for every 8 cases at once; 1: threads "
                                            "only). Linux."),
    shared_budget: bool = typer.Option(False, "--shared-budget", help="The [run] max_cost, max_tokens and "
                                       "max_llm_calls cover all cases together, not each case (cases then run on "
                                       "threads of one process)."),
    resume: Optional[str] = typer.Option(
        None, "--resume", help="Finish an interrupted benchmark (its id), with its own preset, mode and models."
    ),
    instructions: Optional[str] = run_option("instructions"),
    sink: Optional[List[str]] = run_option("sinks"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary JSON on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Run a preset's cases, score their answers, save each result as it finishes and a summary at the end."""
    from rlm_bench.catalog import find_preset
    from rlm_bench.runner import BenchmarkRunner, BenchOptions

    if mode not in ("native", "direct-llm", "harness"):
        raise RlmError(f"unknown mode {mode!r}", hint="choose native, direct-llm or harness")
    if mode == "harness":  # every case runs in the harness environment (a coding agent with tools)
        if env not in (None, "harness") or (framework or "native") != "native":
            raise ConfigError("--mode harness runs every case in the harness environment",
                              hint="leave out --env and --framework (or compare them in --mode native)")
        env = "harness"
    # --instructions and --sink are settings of every case's run (the flag named in any error); the models, the
    # sandbox and --env are the benchmark's own identity (its manifest), so a resume runs with them again
    services = CommandServices.of(ctx)
    loaded = apply_run_flags(services.settings, {"instructions": instructions, "sinks": sink})
    runner = RLMRunner(loaded=loaded)
    progress = None if quiet else _Progress()
    bench = BenchmarkRunner(runner, on_start=progress.start if progress else None,
                            on_case=progress.case if progress else None, processes=processes,
                            shared_budget=shared_budget, trust_records=services.trust_config)
    summaries: list[Any] = []
    try:
        if resume:
            manifest = bench.store.load_manifest(resume)
            if preset and preset.replace("-", "_") != manifest.preset.replace("-", "_"):
                raise RlmError(f"benchmark {resume} ran preset {manifest.preset!r}, not {preset!r}")
            summary = bench.resume(resume, concurrency=concurrency)
        else:
            chosen = find_preset(preset, runner.host, [str(p) for p in pack or []], loaded=runner.loaded)
            frameworks: list[Optional[str]] = [f.strip() for f in (framework or "").split(",") if f.strip()] or [None]
            summaries = []
            for each in frameworks:
                options = BenchOptions(mode=mode, framework=each, environment=env, model=model,  # type: ignore[arg-type]
                                       sub_model=sub_model, sandbox=sandbox, judge_model=judge_model, limit=limit,
                                       concurrency=concurrency)
                summaries.append(bench.run(chosen, options))
            summary = summaries[-1]
    finally:
        if progress:
            progress.stop()
    if not resume and len(summaries) > 1:
        _print_side_by_side(summaries, as_json)
        return
    path = bench.store.summary_path(summary.benchmark_id)
    if as_json:
        typer.echo(json_for_terminal(summary.model_dump(mode="json")))
    else:
        _print_overview(summary)
    say(f"summary: {path}", event="bench summary", path=str(path))


class _Progress:
    """A rich progress bar on stderr; each finished case a notice line with its mark (``say``: JSON with
    ``--log-json``)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=Console(stderr=True), transient=False)
        self.task: Any = None

    def start(self, total: int, done: int) -> None:
        self.bar.start()
        self.task = self.bar.add_task("cases", total=total, completed=done)
        if done:
            say(f"resuming: {done} of {total} cases already finished", event="bench resumed", done=done, total=total)

    def case(self, result: Any, done: int, total: int) -> None:
        from rlm_bench.labels import mark, score_text

        say(f"{mark(result)[0]} {result.case_id}  {result.status}  score {score_text(result.score)}  steps "
            f"{result.steps}  tokens {result.tokens.total:,}  {result.duration_s:.1f}s", event="bench case",
            case_id=result.case_id, status=result.status, score=result.score, done=done, total=total)
        self.bar.update(self.task, completed=done)

    def stop(self) -> None:
        self.bar.stop()


def _print_side_by_side(summaries: list[Any], as_json: bool) -> None:
    """One preset through several frameworks: a row each (mean score, correct, reward, tokens, cost, time, steps)."""
    rows = [{"framework": s.framework or "native", "benchmark_id": s.benchmark_id,
             "accuracy": s.metrics.accuracy, "correct": s.metrics.correct, "scored": s.metrics.scored,
             "completed": s.metrics.completed, "cases": s.metrics.cases, "avg_reward": s.metrics.avg_reward,
             "avg_steps": s.metrics.avg_steps, "tokens": s.metrics.tokens.total, "cost": s.metrics.cost,
             "latency_p50_s": s.metrics.latency_s.p50, "seconds": round(sum(c.duration_s for c in s.cases), 2)}
            for s in summaries]
    if as_json:
        typer.echo(json.dumps({"preset": summaries[0].preset, "frameworks": rows}, indent=2))
        return
    lines = [f"preset {summaries[0].preset} through {len(rows)} frameworks",
             f"{'FRAMEWORK':<14} {'MEAN SCORE':>10} {'CORRECT':>7} {'DONE':>6} {'REWARD':>7} {'STEPS':>6} "
             f"{'TOKENS':>9} {'COST':>9} {'SECONDS':>8}  BENCHMARK"]
    for row in rows:
        score = "-" if row["accuracy"] is None else f"{row['accuracy']:.3f}"
        correct = f"{row['correct']}/{row['scored']}"
        cost = "-" if row["cost"] is None else f"${row['cost']:.4f}"
        lines.append(f"{row['framework']:<14} {score:>10} {correct:>7} {row['completed']:>2}/{row['cases']:<3} "
                     f"{row['avg_reward']:>7.3f} {row['avg_steps']:>6.2f} {row['tokens']:>9,} {cost:>9} "
                     f"{row['seconds']:>8.2f}  {row['benchmark_id']}")
    typer.echo(terminal_safe("\n".join(lines)))


def _print_overview(summary: Any) -> None:
    """The benchmark's cases and figures on stdout (case ids and model names shown, never sent: they come from
    pack files and settings)."""
    from rlm_bench.labels import MARK_LEGEND, mark, overall_line, score_text

    lines = [f"benchmark {summary.benchmark_id}  preset {summary.preset}  mode {summary.mode}  model {summary.model}",
             f"  {'CASE':<30} {'STATUS':<11} {'SCORE':>6} {'STEPS':>5} {'TOKENS':>9} {'SECONDS':>8}"]
    lines += [f"{mark(c)[0]} {c.case_id:<30} {c.status:<11} {score_text(c.score):>6} {c.steps:>5} "
              f"{c.tokens.total:>9,} {c.duration_s:>8.2f}" for c in summary.cases]
    lines += [overall_line(summary.metrics), f"({MARK_LEGEND}; mean score: the mean of the case scores, each 0-1)"]
    typer.echo(terminal_safe("\n".join(lines)))


@app.command("compare", short_help="Gate a benchmark against a baseline; exit 1 on a regression.")
def compare(
    ctx: typer.Context,
    candidate: str = typer.Argument(..., help="Candidate: an id, a unique prefix, latest, previous or a path."),
    baseline: str = typer.Argument(..., help="Baseline: an id, a unique prefix, latest, previous or a path."),
    min_reward_delta: float = typer.Option(0.0, "--min-reward-delta", help="Gate: avg reward delta ≥ this."),
    min_completion_delta: float = typer.Option(0.0, "--min-completion-delta",
                                               help="Gate: completion rate delta ≥ this."),
    max_steps_increase: float = typer.Option(0.0, "--max-steps-increase", help="Gate: avg steps increase ≤ this."),
    min_accuracy_delta: float = typer.Option(0.0, "--min-accuracy-delta", "--min-score-delta",
                                             help="Gate: mean score (accuracy) delta ≥ this."),
    allow_regressions: bool = typer.Option(
        False, "--allow-completion-regressions", help="Do not gate on cases that stop completing."
    ),
    allow_different_cases: bool = typer.Option(
        False, "--allow-different-cases", help="Gate two benchmarks of different presets or case sets (refused "
        "otherwise: exit 2)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Gate a candidate benchmark against a baseline; exit 1 when a gate fails (for CI), exit 2 when the two did
    not run the same cases (another preset, another --limit) unless --allow-different-cases."""
    from rlm_bench.compare import Gates
    from rlm_bench.compare import compare as run_compare
    from rlm_bench.report import comparison_markdown
    from rlm_bench.store import BenchStore

    store = BenchStore(_home(ctx))
    gates = Gates(min_reward_delta=min_reward_delta, min_completion_delta=min_completion_delta,
                  max_steps_increase=max_steps_increase, min_accuracy_delta=min_accuracy_delta,
                  fail_on_completion_regression=not allow_regressions)
    result = run_compare(store.load(candidate), store.load(baseline), gates)
    if not allow_different_cases:
        refuse_different_cases(result)
    if as_json:
        typer.echo(json_for_terminal(result.model_dump(mode="json")))
    else:
        typer.echo(f"candidate {result.candidate_id} vs baseline {result.baseline_id}")
        typer.echo("\n".join(comparison_markdown(result)))
    if not result.passed:
        failed = ", ".join(g.name for g in result.gates if not g.passed)
        say(f"gates failed: {failed}", event="bench gates failed", gates=failed)
        raise typer.Exit(EXIT_GATE_FAILED)


def refuse_different_cases(result: Any) -> None:
    """A gate over two benchmarks that did not run the same cases compares nothing: one clear error (exit 2) naming
    both presets and what differs, unless the caller says it means it."""
    from rlm_host import InputError

    if result.same_preset and not result.only_in_candidate and not result.only_in_baseline:
        return
    differs = [f"only in the candidate: {', '.join(result.only_in_candidate[:5])}" if result.only_in_candidate else "",
               f"only in the baseline: {', '.join(result.only_in_baseline[:5])}" if result.only_in_baseline else ""]
    what = "; ".join(d for d in differs if d)
    raise InputError(f"{result.candidate_id} (preset {result.candidate_preset}) and {result.baseline_id} (preset "
                     f"{result.baseline_preset}) did not run the same cases ({result.common_cases} in common"
                     f"{'; ' + what if what else ''}): a gate across them compares nothing",
                     hint="compare two benchmarks of one preset, or pass --allow-different-cases")


@app.command("report", short_help="A benchmark's report: markdown, csv, json or an HTML page.")
def report(
    ctx: typer.Context,
    benchmarks: Optional[List[str]] = typer.Argument(
        None, help="An id, a unique prefix, latest, previous or a path (default: latest); several only with "
        "--format html (overlaid)."),
    fmt: str = typer.Option("markdown", "--format", "-f", help="markdown, csv, json or html."),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="Add a comparison with this benchmark."),
    output: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Write to this file instead of stdout (html in a terminal without --output: "
        "written next to the summary, its path printed)."),
) -> None:
    """A benchmark's report in markdown, csv or json (with a comparison when --baseline is given), or a
    self-contained HTML page with charts (several benchmarks are overlaid, by mode and model). The report goes
    to stdout (so `> report.html` works) unless --output is given; only an HTML report asked for in a terminal
    without --output is saved next to the summary instead."""
    from rlm_bench.compare import compare as run_compare
    from rlm_bench.report import FORMATS, render
    from rlm_bench.store import BenchStore, load_summary

    refs = list(benchmarks or ["latest"])
    if fmt not in (*FORMATS, "md", "html"):
        raise InputError(f"unknown format {fmt!r}", hint="choose one of: " + ", ".join((*FORMATS, "html")))
    if fmt != "html" and len(refs) > 1:
        raise InputError(f"{fmt} reports cover one benchmark, got {len(refs)}",
                         hint="use --baseline to compare two, or --format html to overlay several")
    store = BenchStore(_home(ctx))
    if fmt == "html":
        from rlm_bench.html_report import render_html

        paths = [store.resolve(ref) for ref in refs] + ([store.resolve(baseline)] if baseline else [])
        text = render_html([load_summary(p) for p in paths])
        if output is None and _stdout_is_terminal():
            extra = f"+{len(paths) - 1}" if len(paths) > 1 else ""
            output = paths[0].with_name(f"{paths[0].stem}{extra}.html")
    else:
        summary = store.load(refs[0])
        base = store.load(baseline) if baseline else None
        text = render(summary, fmt, run_compare(summary, base) if base else None, base)
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    say(f"report: {output}", event="bench report", path=str(output))


def _stdout_is_terminal() -> bool:
    import sys

    return sys.stdout.isatty()


@app.command("judge", short_help="Judge predictions with an LLM (yes/no); resumable.")
def judge(
    ctx: typer.Context,
    predictions: Path = typer.Argument(..., help="JSONL of predictions with question_id and hypothesis/prediction."),
    reference: Path = typer.Option(
        ..., "--reference", "-r", help="JSON/JSONL with question_id, question, answer, question_type."
    ),
    model: Optional[str] = typer.Option(None, "--model", help="Judge model as provider:model."),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Results file (default: PREDICTIONS.judged.jsonl)."),
) -> None:
    """Judge predictions with an LLM (yes/no, question-type prompts); resumes, skipping ids already judged."""
    from rlm_bench.judge import judge_predictions

    runner = RLMRunner(loaded=CommandServices.of(ctx).settings)
    connector = resolve_connector(model or runner.loaded.settings.run.model, host=runner.host, settings=runner.loaded)
    out = output or predictions.with_name(predictions.stem + ".judged.jsonl")
    result = judge_predictions(predictions, reference, out, connector)
    accuracy = "-" if result.accuracy is None else f"{100 * result.accuracy:.1f}%"
    typer.echo(f"judged {result.judged}, skipped {result.skipped} already judged; accuracy {accuracy} over "
               f"{result.total}")
    for kind, value in result.by_type.items():
        typer.echo(f"  {kind:<28} {100 * value:.1f}%")
    if result.missing_reference:
        say(f"no reference for: {', '.join(result.missing_reference)}", event="judge missing reference",
            level="warning")
    say(f"results: {out}", event="judge results", path=str(out))


from rlm_bench.sweep.command import sweep as _sweep  # noqa: E402 - registered last: the sweep command lives beside

app.command("sweep", short_help="Run a grid of benchmarks (models × frameworks × …) here or on a Ray cluster.")(
    _sweep
)

from rlm_bench.sweep.report import sweep_report as _sweep_report  # noqa: E402 - beside the sweep command

app.command("sweep-report", short_help="Report a sweep: a table per axis, charts (md or a self-contained html).")(
    _sweep_report
)
