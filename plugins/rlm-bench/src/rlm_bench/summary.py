"""The benchmark summary JSON: a stable, documented schema (``BenchmarkSummary``, ``schema_version`` 2).

One file per benchmark, ``<home>/benchmarks/<benchmark_id>.json``, written when every case has a result::

    BenchmarkSummary
      schema_version   2 (a breaking change bumps it; fields are only ever added otherwise; 1 named the token
                       counts prompt / completion, and still loads: ``rlm_bench.compat``)
      benchmark_id     "bench_20261122_181500_123456_ab12" (sortable by time)
      preset, source, description, pack_file      which cases: a registered preset or a pack file
      mode             "native" (the RLM loop) | "direct-llm" (one call, context in the prompt: the baseline) |
                       "harness" (the native loop in the harness environment, rlm-harness)
      framework, environment, model, sub_model, sandbox, judge_model   (model and sandbox: as resolved)
      instructions     the domain guidance every case ran with ([run] instructions), or null
      started_at, finished_at, host_version
      cases_planned    cases selected (after --limit); every one has a result in ``cases``
      resumed_cases    results reused from an interrupted attempt (not run again)
      metrics          Aggregate over every case
      by_pack          {pack: Aggregate}
      by_tag           {tag key: {tag value: Aggregate}} — task_family, length_bucket, paradigm, …
      cases            [CaseResult], in the preset's order

    Aggregate
      cases, completed, completion_rate, errors
      scored           cases with an expected answer;  accuracy = mean score over them (null when none)
      correct          scored cases with a full score (1.0)
      avg_reward, avg_steps, avg_tokens
      tokens           {input, output, total, root, sub} (input / output: OpenTelemetry's input_tokens /
                       output_tokens)
      cost             USD, null when no model reported a price
      latency_s        {avg, p50, p95, p99, max} (percentiles linearly interpolated between ranks)

A CaseResult is one case's outcome: status (``completed`` = a final answer, ``incomplete``, ``error``), the
answer and expected answer, the scorer, ``score`` in [0, 1] (null when unscored) and ``correct``, steps,
reward, tokens, cost, latency, context size, the run id and trajectory, and notes (e.g. a truncated prompt).
docs/schemas.md describes every field.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, Field

SCHEMA_VERSION = 2
Mode = Literal["native", "direct-llm", "harness"]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class TokenTotals(BaseModel):
    """Tokens of a case or a group: input and output (as OpenTelemetry's gen_ai.usage.*), their total, per role."""

    input: int = 0
    output: int = 0
    total: int = 0
    root: int = 0
    sub: int = 0


class Latency(BaseModel):
    avg: float = 0.0
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    max: float = 0.0


class CaseResult(BaseModel):
    """The outcome of one case (also saved alone, as the case finishes, for resuming)."""

    case_id: str
    preset: str
    description: str = ""
    tags: dict[str, str] = Field(default_factory=dict)
    mode: Mode = "native"
    environment: str = ""
    model: str = ""
    sandbox: str = ""
    status: Literal["completed", "incomplete", "error"]
    termination_reason: str = ""
    task: str = ""
    final_response: Optional[str] = None
    expected: Any = None
    scorer: Optional[str] = None
    score: Optional[float] = None
    correct: Optional[bool] = None
    score_detail: dict[str, Any] = Field(default_factory=dict)
    steps: int = 0
    reward: float = 0.0
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    llm_calls: int = 0
    cost: Optional[float] = None
    duration_s: float = 0.0
    context_chars: int = 0
    context_tokens: int = 0
    run_id: Optional[str] = None
    trajectory_path: Optional[str] = None
    error: Optional[str] = None
    notes: list[str] = Field(default_factory=list)
    finished_at: datetime = Field(default_factory=utc_now)

    @property
    def completed(self) -> bool:
        return self.status == "completed"


class Aggregate(BaseModel):
    """Figures over a group of case results (see the module docstring)."""

    cases: int = 0
    completed: int = 0
    completion_rate: float = 0.0
    errors: int = 0
    scored: int = 0
    accuracy: Optional[float] = None
    correct: int = 0
    avg_reward: float = 0.0
    avg_steps: float = 0.0
    avg_tokens: float = 0.0
    tokens: TokenTotals = Field(default_factory=TokenTotals)
    cost: Optional[float] = None
    latency_s: Latency = Field(default_factory=Latency)


class BenchmarkIdentity(BaseModel):
    """What a benchmark ran: shared by its manifest (written at start) and its summary (written at the end)."""

    benchmark_id: str
    preset: str
    source: str = "builtin"
    description: str = ""
    pack_file: Optional[str] = None
    mode: Mode = "native"
    framework: str = "native"
    environment: Optional[str] = None
    sub_model: Optional[str] = None
    sandbox: Optional[str] = None
    judge_model: Optional[str] = None
    instructions: Optional[str] = None  # the domain guidance every case ran with ([run] instructions)
    host_version: str = ""


class BenchmarkSummary(BenchmarkIdentity):
    """The summary JSON of one benchmark (see the module docstring for every field)."""

    schema_version: int = SCHEMA_VERSION
    model: str = ""
    started_at: datetime
    finished_at: datetime
    cases_planned: int = 0
    resumed_cases: int = 0
    metrics: Aggregate
    by_pack: dict[str, Aggregate] = Field(default_factory=dict)
    by_tag: dict[str, dict[str, Aggregate]] = Field(default_factory=dict)
    cases: list[CaseResult] = Field(default_factory=list)


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0–100), linearly interpolated between closest ranks (numpy's default)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _r(value: float) -> float:
    return round(value, 6)


def aggregate(results: Iterable[CaseResult]) -> Aggregate:
    """The Aggregate of ``results`` (an empty group gives zeros and a null accuracy)."""
    items = list(results)
    n = len(items)
    if not n:
        return Aggregate()
    scored = [r.score for r in items if r.score is not None]
    costs = [r.cost for r in items if r.cost is not None]
    durations = [r.duration_s for r in items]
    tokens = TokenTotals()
    for r in items:
        for key in TokenTotals.model_fields:
            setattr(tokens, key, getattr(tokens, key) + getattr(r.tokens, key))
    completed = sum(r.completed for r in items)
    return Aggregate(
        cases=n, completed=completed, completion_rate=_r(completed / n), errors=sum(r.status == "error" for r in items),
        scored=len(scored), accuracy=_r(sum(scored) / len(scored)) if scored else None,
        correct=sum(bool(r.correct) for r in items), avg_reward=_r(sum(r.reward for r in items) / n),
        avg_steps=_r(sum(r.steps for r in items) / n), avg_tokens=_r(tokens.total / n), tokens=tokens,
        cost=_r(sum(costs)) if costs else None,
        latency_s=Latency(avg=_r(sum(durations) / n), p50=_r(percentile(durations, 50)),
                          p95=_r(percentile(durations, 95)),
                          p99=_r(percentile(durations, 99)), max=_r(max(durations))),
    )


def group_by_tag(results: list[CaseResult]) -> dict[str, dict[str, Aggregate]]:
    keys = sorted({key for r in results for key in r.tags})
    out: dict[str, dict[str, Aggregate]] = {}
    for key in keys:
        values = sorted({r.tags[key] for r in results if key in r.tags})
        out[key] = {value: aggregate(r for r in results if r.tags.get(key) == value) for value in values}
    return out


def build_summary(manifest: Any, results: list[CaseResult], *, resumed: int = 0) -> BenchmarkSummary:
    """The summary of a finished benchmark from its manifest and its case results (in the manifest's order)."""
    order = {case_id: i for i, case_id in enumerate(manifest.case_ids)}
    ordered = sorted(results, key=lambda r: order.get(r.case_id, len(order)))
    models = [r.model for r in ordered if r.model]
    sandboxes = [r.sandbox for r in ordered if r.sandbox]
    packs = sorted({r.preset for r in ordered})
    return BenchmarkSummary(
        benchmark_id=manifest.benchmark_id, preset=manifest.preset, source=manifest.source,
        description=manifest.description, pack_file=manifest.pack_file, mode=manifest.mode,
        framework=manifest.framework, environment=manifest.environment,
        model=models[0] if models else (manifest.model or ""), sub_model=manifest.sub_model,
        sandbox=manifest.sandbox or (sandboxes[0] if sandboxes else None), judge_model=manifest.judge_model,
        instructions=getattr(manifest, "instructions", None), started_at=manifest.started_at,
        finished_at=utc_now(), host_version=manifest.host_version, cases_planned=len(manifest.case_ids),
        resumed_cases=resumed, metrics=aggregate(ordered),
        by_pack={pack: aggregate(r for r in ordered if r.preset == pack) for pack in packs},
        by_tag=group_by_tag(ordered), cases=ordered,
    )
