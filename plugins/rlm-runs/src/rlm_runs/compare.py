"""Two saved runs side by side: where their root steps first diverge, and the deltas of their outcomes.

Steps are compared in order by action kind, code (whitespace-normalised) and success; the first step that differs
(or where one run has no more steps) is the divergence. Deltas are B − A for reward, tokens, cost, duration and
efficiency — reward × 1000 / tokens, RLM Code's figure for how much reward a thousand tokens bought.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any, Optional

from pydantic import BaseModel

from rlm_host.sdk.embedding import Replay, ReplayStep, run_labels


class StepSide(BaseModel):
    """One run's step at the divergence (None fields: that run had no such step)."""

    action: Optional[str] = None
    code: Optional[str] = None
    success: Optional[bool] = None


class Divergence(BaseModel):
    step: int
    differs_in: list[str]  # "action", "code", "success", or "length" when one run ended first
    a: StepSide
    b: StepSide


class Delta(BaseModel):
    a: Optional[float]
    b: Optional[float]
    delta: Optional[float]


class RunComparison(BaseModel):
    run_a: str
    run_b: str
    same_task: bool
    identical_steps: int  # the leading steps both runs took alike
    fork_at: Optional[int] = None  # B is a fork of A (or A of B) whose first fork_at steps were replayed
    divergence: Optional[Divergence]  # None: the same steps from start to end
    deltas: dict[str, Delta]


def _side(step: Optional[ReplayStep]) -> StepSide:
    return StepSide() if step is None else StepSide(action=step.record.action, code=step.record.code,
                                                     success=step.error is None)


def _outcome(replay: Replay) -> dict[str, Optional[float]]:
    result = replay.result
    if result is None:
        return {"reward": None, "tokens": None, "cost": None, "duration_s": None, "efficiency": None, "steps": None}
    tokens = result.usage.total_tokens
    cost = result.cost if result.cost is not None else result.usage.cost
    efficiency = result.total_reward * 1000 / tokens if tokens else None
    return {"reward": result.total_reward, "tokens": float(tokens), "cost": cost, "duration_s": result.duration_s,
            "efficiency": efficiency, "steps": float(result.steps)}


def compare_runs(a: Replay, b: Replay) -> RunComparison:
    """The comparison of run ``a`` (the reference) and run ``b``."""
    divergence = None
    for index, (left, right) in enumerate(zip_longest(a.steps, b.steps)):
        x, y = _side(left), _side(right)
        differs = ["length"] if left is None or right is None else [name for name, same in (
            ("action", x.action == y.action), ("code", _words(x.code) == _words(y.code)),
            ("success", x.success == y.success)) if not same]
        if differs:
            divergence = Divergence(step=index + 1, differs_in=differs, a=x, b=y)
            break
    identical = divergence.step - 1 if divergence is not None else len(a.steps)
    first, second = _outcome(a), _outcome(b)
    deltas = {key: Delta(a=first[key], b=second[key], delta=_minus(second[key], first[key])) for key in first}
    task_a, task_b = a.root.start.get("task"), b.root.start.get("task")
    return RunComparison(run_a=a.root.run_id, run_b=b.root.run_id, same_task=task_a == task_b,
                         identical_steps=identical, divergence=divergence, deltas=deltas,
                         fork_at=_fork_point(a, b) or _fork_point(b, a))


def _fork_point(source: Replay, fork: Replay) -> Optional[int]:
    """The step ``fork`` was forked from ``source`` at (its labels ``fork_of`` / ``fork_at``), or None."""
    labels = run_labels(fork.root.start)
    at = labels.get("fork_at", "")
    return int(at) if labels.get("fork_of") == source.root.run_id and at.isdigit() else None


def _words(code: Optional[str]) -> str:
    return " ".join((code or "").split())


def _minus(b: Optional[float], a: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else round(b - a, 6)


def render_comparison(comparison: RunComparison) -> str:
    """The comparison as a few lines of text."""
    lines = [f"A {comparison.run_a}", f"B {comparison.run_b}" + ("" if comparison.same_task else "  (another task)")]
    if comparison.fork_at is not None:
        lines.append(f"one is a fork of the other at step {comparison.fork_at}: steps 1-{comparison.fork_at} "
                     "replayed as recorded, the runs go their own ways after")
    if comparison.divergence is None:
        lines.append(f"the same {comparison.identical_steps} steps from start to end")
    else:
        d = comparison.divergence
        lines.append(f"diverge at step {d.step} ({', '.join(d.differs_in)}); {comparison.identical_steps} steps alike "
                     "before")
        for label, side in (("A", d.a), ("B", d.b)):
            code = _words(side.code)[:100]
            shown = f"{side.action} [{'ok' if side.success else 'error'}]" + (f"  {code}" if code else "")
            lines.append(f"  {label}: " + (f"no step {d.step}" if side.action is None else shown))
    lines.append(f"{'':<12}{'A':>12}{'B':>12}{'B − A':>12}")
    for name, delta in comparison.deltas.items():
        lines.append(f"{name:<12}{_fmt(delta.a):>12}{_fmt(delta.b):>12}{_fmt(delta.delta, sign=True):>12}")
    if "efficiency" in comparison.deltas:
        lines.append("efficiency: reward per 1,000 tokens (total reward × 1000 / total tokens)")
    return "\n".join(lines)


def _fmt(value: Any, sign: bool = False) -> str:
    return "—" if value is None else f"{value:+.4g}" if sign else f"{value:.4g}"
