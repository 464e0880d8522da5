"""Running a benchmark: up to N cases at once, each result saved as it finishes, resumable after a kill.

``BenchmarkRunner.run(preset, options)`` selects the cases, writes the manifest, runs every case and writes the
summary; ``resume(benchmark_id)`` reloads the manifest and runs only the cases without a saved result. A case
runs in the native loop (``RLMRunner.run_task``, the context in the sandbox) or as one direct LLM call
(``direct-llm``, the baseline); a case may force its own mode. Its answer is then scored.

Ctrl-C (or a case cancelled underneath) stops the benchmark: running cases are cancelled, finished ones stay
saved, and ``BenchmarkInterrupted`` says how to resume. An error raised by ``run_task`` itself (a bad model,
sandbox or framework name: nothing ran) stops the benchmark with that error; a case that fails while running is
recorded as an ``error`` result.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from rlm_bench.cases import BenchmarkCase, length_bucket
from rlm_bench.catalog import Preset, find_preset
from rlm_bench.direct import run_direct
from rlm_bench.projects import prepare_project, score_hidden_tests
from rlm_bench.record_screen import manifest_for_resume
from rlm_bench.scorers import score
from rlm_bench.store import BenchStore, Manifest, new_benchmark_id
from rlm_bench.summary import BenchmarkSummary, CaseResult, Mode, TokenTotals
import rlm_host
from rlm_host import ModelError, RlmError
from rlm_host.sdk.embedding import Budget
from rlm_host.sdk.models import ModelConnector, ModelOptions, estimate_tokens, resolve_connector


class BenchmarkInterrupted(RlmError):
    """The benchmark stopped before every case finished; finished cases are saved."""

    exit_code = 130

    def __init__(self, benchmark_id: str, done: int, total: int) -> None:
        super().__init__(
            f"benchmark {benchmark_id} interrupted: {done} of {total} cases finished and saved",
            hint=f"resume it with: rlm bench run --resume {benchmark_id}",
        )
        self.benchmark_id, self.done, self.total = benchmark_id, done, total


@dataclass
class BenchOptions:
    """How to run a benchmark (None: the ``[run]`` settings' value)."""

    mode: Mode = "native"
    framework: Optional[str] = None
    environment: Optional[str] = None
    model: Optional[str] = None
    sub_model: Optional[str] = None
    sandbox: Optional[str] = None
    judge_model: Optional[str] = None
    limit: Optional[int] = None
    concurrency: int = 1


ProgressHook = Callable[[CaseResult, int, int], None]


class BenchmarkRunner:
    """Runs benchmarks with an ``RLMRunner`` (its host, settings and home); ``connectors`` are passed to every
    run (``{"root", "sub", "judge"}``, for tests and embedding). A benchmark runs as a one-point sweep on this
    machine (``rlm_bench.sweep``: ``SweepDriver`` and ``LocalExecutor``): ``processes`` spreads the cases over that
    many forked worker processes (None: one per core for every 8 cases at once; see :mod:`rlm_bench.shards`); the
    default, 1, runs them on threads of this process. ``shared_budget`` makes the ``[run]`` cost, token and
    sub-call limits cover all cases of one invocation together (``spent`` holds the counters); the cases then
    run on threads, which share the budget. ``resume`` screens a manifest this user's rlm did not sign
    (``rlm_bench.record_screen``) unless ``trust_records`` (``--trust-config``)."""

    def __init__(self, runner: Any, *, connectors: Optional[dict[str, ModelConnector]] = None,
                 on_start: Optional[Callable[[int, int], None]] = None, on_case: Optional[ProgressHook] = None,
                 processes: Optional[int] = 1, shared_budget: bool = False,
                 trust_records: bool = False) -> None:
        self.processes = processes
        self.trust_records = trust_records
        self.shared_budget = shared_budget
        self.pool: Optional[Budget] = None  # with shared_budget: what every case of the run draws from
        self.runner = runner
        self.store = BenchStore(runner.home)
        self.connectors = dict(connectors or {})
        self.on_start = on_start
        self.on_case = on_case

    # ------------------------------------------------------------------ entry points

    def run(self, preset: Preset, options: BenchOptions) -> BenchmarkSummary:
        cases = preset.cases[: options.limit] if options.limit else list(preset.cases)
        if not cases:
            raise RlmError(f"preset {preset.name!r} has no cases")
        manifest = Manifest(
            benchmark_id=new_benchmark_id(), preset=preset.name, source=preset.source, description=preset.description,
            pack_file=preset.pack_file, mode=options.mode, framework=options.framework or "native",
            environment=options.environment, model=options.model, sub_model=options.sub_model, sandbox=options.sandbox,
            judge_model=options.judge_model, case_ids=[c.case_id for c in cases], host_version=rlm_host.__version__,
            instructions=self.runner.loaded.settings.run.instructions,
        )
        self.store.write_manifest(manifest)
        try:
            return self._execute(manifest, cases, {}, max(1, options.concurrency))
        except BenchmarkInterrupted:
            raise
        except BaseException:
            if not self.store.load_cases(manifest.benchmark_id):  # nothing ran (a bad model name…): leave no trace
                self.store.remove(manifest.benchmark_id)
            raise

    def resume(self, benchmark_id: str, concurrency: int = 1) -> BenchmarkSummary:
        stored = self.store.read_manifest(benchmark_id)
        manifest = manifest_for_resume(stored, Path.cwd(), self.runner.host, self.trust_records)
        preset = find_preset(manifest.preset, self.runner.host, [manifest.pack_file] if manifest.pack_file else [],
                             loaded=self.runner.loaded)
        by_id = {c.case_id: c for c in preset.cases}
        missing = [case_id for case_id in manifest.case_ids if case_id not in by_id]
        if missing:
            gone = ", ".join(missing)
            raise RlmError(f"cannot resume {benchmark_id}: preset {preset.name!r} no longer has case(s) {gone}")
        done = {k: v for k, v in self.store.load_cases(benchmark_id).items() if k in by_id}
        self.store.summary_path(benchmark_id).unlink(missing_ok=True)  # written again once every case is done
        return self._execute(manifest, [by_id[i] for i in manifest.case_ids], done, max(1, concurrency))

    # ------------------------------------------------------------------ scheduling

    def _execute(self, manifest: Manifest, cases: list[BenchmarkCase], done: dict[str, CaseResult],
                 concurrency: int) -> BenchmarkSummary:
        """The cases without a result, as a one-point sweep on this machine (``rlm_bench.sweep``)."""
        from rlm_bench.sweep import LocalExecutor, Plan, SweepDriver, SweepInterrupted, SweepItem, SweepStore

        by_id = {c.case_id: c for c in cases}
        items = [SweepItem(manifest.benchmark_id, i) for i in by_id if i not in done]
        if self.shared_budget:
            run = self.runner.loaded.settings.run
            self.pool = Budget(timeout=float("inf"), max_llm_calls=run.max_llm_calls, max_tokens=run.max_tokens,
                               max_cost=run.max_cost)
        summaries: list[BenchmarkSummary] = []

        def run_case(item: SweepItem, cancel: threading.Event) -> dict[str, Any]:
            result = self.run_case(by_id[item.case_id], manifest, cancel)
            return {"cancelled": True} if result is None else {"result": result}

        def listen(kind: str, progress: Any, value: Any) -> None:
            if kind == "start" and self.on_start:
                self.on_start(progress.total, progress.done)
            elif kind == "case" and self.on_case:
                self.on_case(value, progress.done, progress.total)
            elif kind == "summary":
                summaries.append(value)

        processes = self.processes if len(items) > 1 and self.pool is None else 1  # one budget: one process
        # forked now, while this process runs no thread yet (a progress bar starts one)
        executor = LocalExecutor(min(concurrency, max(1, len(items))), processes, run=run_case)
        driver = SweepDriver(SweepStore(self.runner.home), executor, listener=listen, strict=True)
        try:
            driver.run(Plan.one_point(manifest, items))
        except SweepInterrupted:
            pass  # said below: the finished cases are saved
        if driver.failure is not None:
            raise driver.failure.error or RlmError(
                driver.failure.reason, hint=f"resume it with: rlm bench run --resume {manifest.benchmark_id}")
        if not summaries:
            raise BenchmarkInterrupted(manifest.benchmark_id, driver.progress.done, len(cases))
        return summaries[0]

    # ------------------------------------------------------------------ one case

    def run_case(self, case: BenchmarkCase, manifest: Manifest, cancel: threading.Event) -> Optional[CaseResult]:
        """Run one case of ``manifest``'s benchmark here and score it: its ``CaseResult`` (``error`` when the case
        failed, e.g. its context could not be built), or None when it was cancelled (``cancel`` set, or the run
        ended ``cancelled``). Saves nothing: the caller keeps the result (``rlm bench run`` and every sweep
        executor, through ``rlm_bench.sweep.worker.run_item``). Raises what stops every case alike (``RlmError``:
        a model, sandbox or framework that does not exist)."""
        started = time.monotonic()
        mode: Mode = case.mode or manifest.mode
        tags = case.all_tags()
        base: dict[str, Any] = dict(case_id=case.case_id, preset=manifest.preset, description=case.description,
                                    mode=mode, environment=manifest.environment or case.environment)
        try:
            ready = case.materialize()
        except Exception as exc:  # a missing file, bad parameters, a generator bug: this case fails, not the run
            error = str(exc) if isinstance(exc, RlmError) else f"{type(exc).__name__}: {exc}"
            return CaseResult(**base, tags=tags, task=case.task or "", status="error", error=error,
                              expected=case.expected, scorer=case.scorer, score=0.0 if case.has_answer else None,
                              correct=False if case.has_answer else None, termination_reason="error",
                              duration_s=round(time.monotonic() - started, 4))
        if ready.context is not None:
            tags.setdefault("length_bucket", length_bucket(estimate_tokens(ready.chars)))
        workdir = None
        if mode in ("native", "harness") and (case.project or case.hidden_tests):
            workdir = prepare_project(self.store.project_path(manifest.benchmark_id, case.case_id), case.project)
        own = bool(case.framework) and manifest.framework == "native"  # the case's own framework, not everyone's
        framework = case.framework if own else manifest.framework
        if own and mode == "native" and framework not in ("native", *self.runner.host.frameworks().names()):
            return CaseResult(**base, tags=tags, task=ready.task, status="error", scorer=ready.scorer,
                              expected=ready.expected, score=0.0, correct=False, termination_reason="error",
                              error=f"framework {framework!r} is not installed (pip install rlm-adapter-…)",
                              duration_s=round(time.monotonic() - started, 4))
        if mode in ("native", "harness"):  # harness: the native loop, in the harness environment
            fields = self._native(case, ready, manifest, cancel, workdir, framework)
        else:
            fields = self._direct(ready, manifest, started)
        if fields is None:
            return None
        ready.context = None  # the context is not kept past its case
        result = CaseResult(**{**base, **fields}, tags=tags, task=ready.task, expected=ready.expected,
                            scorer=ready.scorer, context_chars=ready.chars,
                            context_tokens=estimate_tokens(ready.chars))
        if case.hidden_tests and workdir is not None:
            self._score_project(result, case, manifest, workdir)
        elif ready.expected is not None:
            self._score(result, manifest, tags)
        return result

    def _score_project(self, result: CaseResult, case: BenchmarkCase, manifest: Manifest, workdir: Any) -> None:
        """Hidden tests against the project the run left, in a fresh sandbox session (rlm_bench.projects)."""
        try:
            value, correct, detail = score_hidden_tests(
                self.runner, workdir, case.hidden_tests, environment=result.environment or case.environment,
                sandbox=manifest.sandbox)
        except RlmError as exc:
            result.score, result.correct = 0.0, False
            result.notes.append(f"hidden tests could not run: {exc}")
            return
        result.score, result.correct, result.score_detail = value, correct, detail

    def _native(self, case: BenchmarkCase, ready: Any, manifest: Manifest, cancel: threading.Event,
                workdir: Any = None, framework: Optional[str] = None) -> Optional[dict[str, Any]]:
        connectors = {k: v for k, v in self.connectors.items() if k in ("root", "sub")} or None
        options = {**case.options, **({"workdir": workdir} if workdir is not None else {})}
        # labels reach every sink: an MLflow sink groups a benchmark's runs under one parent run by benchmark_id
        labels = {**self.runner.loaded.settings.run.labels, "benchmark_id": manifest.benchmark_id,
                  "preset": manifest.preset, "case": case.case_id}
        options["labels"] = {**labels, **options.get("labels", {})}
        run = self.runner.run_task(
            ready.task, context=ready.context, cancel=cancel, connectors=connectors,
            environment=manifest.environment or case.environment, framework=framework or manifest.framework,
            model=manifest.model, sub_model=manifest.sub_model, sandbox=manifest.sandbox,
            max_steps=case.max_steps, exec_timeout=case.exec_timeout, shared_budget=self.pool, **options,
        )
        if run.termination_reason == "cancelled":
            return None
        usage = run.usage
        status = "completed" if run.completed else "error" if run.termination_reason == "error" else "incomplete"
        return dict(
            environment=run.environment, model=run.model, sandbox=run.sandbox, status=status,
            termination_reason=run.termination_reason, final_response=run.final_response, steps=run.steps,
            reward=run.total_reward,
            tokens=TokenTotals(input=usage.root.input_tokens + usage.sub.input_tokens,
                               output=usage.root.output_tokens + usage.sub.output_tokens,
                               total=usage.total_tokens, root=usage.root.total_tokens, sub=usage.sub.total_tokens),
            llm_calls=usage.root.calls + usage.sub.calls, cost=run.cost, duration_s=run.duration_s,
            run_id=run.run_id, trajectory_path=run.trajectory_path, error=run.error,
        )

    def _direct(self, ready: Any, manifest: Manifest, started: float) -> dict[str, Any]:
        connector = self._root(manifest)
        outcome = run_direct(connector, ready.task, ready.context, timeout=self.runner.loaded.settings.run.timeout)
        answered = outcome.error is None and bool(outcome.text)
        total = outcome.input_tokens + outcome.output_tokens
        status = "completed" if answered else "error" if outcome.error else "incomplete"
        reward = self.runner.loaded.settings.rewards.final_reward if answered else 0.0
        return dict(
            environment="direct-llm", model=connector.name, status=status,
            termination_reason="final" if answered else "error" if outcome.error else "no_answer",
            final_response=outcome.text, steps=1, reward=reward,
            tokens=TokenTotals(input=outcome.input_tokens, output=outcome.output_tokens, total=total, root=total),
            llm_calls=1, cost=outcome.cost, duration_s=round(time.monotonic() - started, 4), error=outcome.error,
            notes=outcome.notes,
        )

    def _score(self, result: CaseResult, manifest: Manifest, tags: dict[str, str]) -> None:
        if result.scorer == "judge":
            from rlm_bench.judge import judge_answer

            try:
                connector = self._judge(manifest)
                verdict = judge_answer(connector, result.task, result.expected, result.final_response,
                                       tags.get("question_type"))
            except ModelError as exc:
                result.notes.append(f"judge failed: {exc}")
                return
            result.score, result.correct = float(verdict.label), verdict.label
            result.score_detail = {"judge": verdict.model, "label": verdict.label, "raw": verdict.raw,
                                   "question_type": verdict.question_type}
            return
        outcome = score(result.scorer or "normalized_exact", result.final_response, result.expected)
        result.score, result.correct, result.score_detail = outcome.value, outcome.correct, outcome.detail

    def _root(self, manifest: Manifest) -> ModelConnector:
        return self.connectors.get("root") or self._build(manifest.model)

    def _judge(self, manifest: Manifest) -> ModelConnector:
        """The judge: an injected one, else ``--judge-model``, else the root model."""
        if "judge" in self.connectors:
            return self.connectors["judge"]
        return self._build(manifest.judge_model) if manifest.judge_model else self._root(manifest)

    def _build(self, model: Optional[str]) -> ModelConnector:
        """A fresh connector for ``model`` (the ``[run]`` model when None), as the native loop builds one per run
        (a scripted model then replays its script from the start for every case)."""
        settings = self.runner.loaded.settings.run
        options = ModelOptions(base_url=settings.base_url)
        loaded, host = self.runner.loaded, self.runner.host
        return resolve_connector(model or settings.model, host=host, settings=loaded, options=options)
