"""Comparing two benchmarks with CI gates: ``rlm bench compare CANDIDATE BASELINE`` exits 1 when a gate fails.

Four gates on the summaries' overall metrics (reward, completion, steps, cases that stop completing), plus an
accuracy gate (on the mean score, the summary's ``accuracy`` field):

| gate | passes when | default |
| --- | --- | --- |
| ``reward`` | candidate avg_reward − baseline avg_reward ≥ ``min_reward_delta`` | 0.0 |
| ``completion`` | completion_rate delta ≥ ``min_completion_delta`` | 0.0 |
| ``steps`` | avg_steps increase ≤ ``max_steps_increase`` | 0.0 |
| ``completion_regressions`` | no case completes in the baseline but not in the candidate | on |
| ``accuracy`` | mean score delta ≥ ``min_accuracy_delta`` (see below) | 0.0 |

The accuracy gate fails when the baseline has scored cases and the candidate none, and is not enforced when the
baseline has none. ``fail_on_completion_regression=False`` turns the regressions gate off.

Cases are matched by ``case_id`` for the per-case lists (completion and score regressions and improvements).
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

from rlm_bench.summary import BenchmarkSummary

EPSILON = 1e-9


class Gates(BaseModel):
    """Thresholds of the gates (see the module docstring)."""

    min_reward_delta: float = 0.0
    min_completion_delta: float = 0.0
    max_steps_increase: float = 0.0
    fail_on_completion_regression: bool = True
    min_accuracy_delta: float = 0.0


class GateResult(BaseModel):
    name: str
    passed: bool
    value: Optional[float] = None
    threshold: Optional[float] = None
    rule: str


class MetricDelta(BaseModel):
    candidate: Optional[float] = None
    baseline: Optional[float] = None
    delta: Optional[float] = None


class CaseChange(BaseModel):
    case_id: str
    kind: str  # completion_regression | completion_improvement | score_regression | score_improvement
    baseline_status: str
    candidate_status: str
    baseline_score: Optional[float] = None
    candidate_score: Optional[float] = None


class Comparison(BaseModel):
    candidate_id: str
    baseline_id: str
    candidate_preset: str
    baseline_preset: str
    same_preset: bool
    same_instructions: bool = True  # different domain guidance: the two are not the same experiment
    metrics: dict[str, MetricDelta] = Field(default_factory=dict)
    gates: list[GateResult] = Field(default_factory=list)
    common_cases: int = 0
    only_in_candidate: list[str] = Field(default_factory=list)
    only_in_baseline: list[str] = Field(default_factory=list)
    changes: list[CaseChange] = Field(default_factory=list)
    passed: bool = True

    def count(self, kind: str) -> int:
        return sum(change.kind == kind for change in self.changes)


def _delta(candidate: Optional[float], baseline: Optional[float]) -> MetricDelta:
    delta = None if candidate is None or baseline is None else round(candidate - baseline, 6)
    return MetricDelta(candidate=candidate, baseline=baseline, delta=delta)


def _case_changes(candidate: BenchmarkSummary, baseline: BenchmarkSummary) -> tuple[list[CaseChange], int]:
    base = {c.case_id: c for c in baseline.cases}
    changes, common = [], 0
    for case in candidate.cases:
        old = base.get(case.case_id)
        if old is None:
            continue
        common += 1
        row: dict[str, Any] = dict(case_id=case.case_id, baseline_status=old.status, candidate_status=case.status,
                                   baseline_score=old.score, candidate_score=case.score)
        if old.completed and not case.completed:
            changes.append(CaseChange(kind="completion_regression", **row))
        elif case.completed and not old.completed:
            changes.append(CaseChange(kind="completion_improvement", **row))
        if old.score is not None and (case.score is None or case.score < old.score - EPSILON):
            changes.append(CaseChange(kind="score_regression", **row))
        elif case.score is not None and (old.score is None or case.score > old.score + EPSILON):
            changes.append(CaseChange(kind="score_improvement", **row))
    return changes, common


def compare(candidate: BenchmarkSummary, baseline: BenchmarkSummary, gates: Optional[Gates] = None) -> Comparison:
    """Gate ``candidate`` against ``baseline``."""
    gates = gates or Gates()
    new, old = candidate.metrics, baseline.metrics
    metrics = {
        "avg_reward": _delta(new.avg_reward, old.avg_reward),
        "completion_rate": _delta(new.completion_rate, old.completion_rate),
        "avg_steps": _delta(new.avg_steps, old.avg_steps),
        "accuracy": _delta(new.accuracy, old.accuracy),
        "avg_tokens": _delta(new.avg_tokens, old.avg_tokens),
        "cost": _delta(new.cost, old.cost),
        "latency_p50_s": _delta(new.latency_s.p50, old.latency_s.p50),
        "latency_p95_s": _delta(new.latency_s.p95, old.latency_s.p95),
    }
    changes, common = _case_changes(candidate, baseline)
    regressions = sum(c.kind == "completion_regression" for c in changes)
    reward, completion, steps = (metrics[k].delta or 0.0 for k in ("avg_reward", "completion_rate", "avg_steps"))
    results = [
        GateResult(name="reward", passed=reward >= gates.min_reward_delta - EPSILON, value=reward,
                   threshold=gates.min_reward_delta, rule="avg_reward delta ≥ threshold"),
        GateResult(name="completion", passed=completion >= gates.min_completion_delta - EPSILON, value=completion,
                   threshold=gates.min_completion_delta, rule="completion_rate delta ≥ threshold"),
        GateResult(name="steps", passed=steps <= gates.max_steps_increase + EPSILON, value=steps,
                   threshold=gates.max_steps_increase, rule="avg_steps increase ≤ threshold"),
        GateResult(name="completion_regressions", passed=regressions == 0 or not gates.fail_on_completion_regression,
                   value=float(regressions), threshold=0.0 if gates.fail_on_completion_regression else None,
                   rule="no case stops completing" if gates.fail_on_completion_regression else "not enforced"),
        _accuracy_gate(metrics["accuracy"], gates.min_accuracy_delta),
    ]
    base_ids = {c.case_id for c in baseline.cases}
    cand_ids = {c.case_id for c in candidate.cases}
    return Comparison(
        candidate_id=candidate.benchmark_id, baseline_id=baseline.benchmark_id, candidate_preset=candidate.preset,
        baseline_preset=baseline.preset, same_preset=candidate.preset == baseline.preset,
        same_instructions=(candidate.instructions or None) == (baseline.instructions or None), metrics=metrics,
        gates=results, common_cases=common, only_in_candidate=sorted(cand_ids - base_ids),
        only_in_baseline=sorted(base_ids - cand_ids), changes=changes, passed=all(g.passed for g in results),
    )


def _accuracy_gate(accuracy: MetricDelta, threshold: float) -> GateResult:
    rule = "mean score delta ≥ threshold"
    if accuracy.baseline is None:
        return GateResult(name="accuracy", passed=True, value=accuracy.delta, threshold=threshold,
                          rule="no scored cases in the baseline: not enforced")
    if accuracy.candidate is None:
        return GateResult(name="accuracy", passed=False, threshold=threshold, rule="the candidate has no scored cases")
    delta = accuracy.delta or 0.0
    return GateResult(name="accuracy", passed=delta >= threshold - EPSILON, value=delta, threshold=threshold, rule=rule)
