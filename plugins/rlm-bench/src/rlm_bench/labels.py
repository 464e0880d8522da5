"""How benchmark figures are named wherever a person reads them (terminal, reports, leaderboard).

- **mean score**: the mean of the case scores (each in [0, 1]) over the scored cases — the summary's ``accuracy``
  field, ``--metric accuracy`` (alias ``score``) and the ``accuracy`` gate;
- **correct**: how many scored cases got the full score (1.0), out of the scored cases;
- **efficiency** (``EFF``): mean score per 1,000 tokens (mean score × 1000 / average tokens per case): what the
  tokens bought in right answers (a step reward, earned by any final answer, would rank a wrong benchmark first).

A case's mark follows its score, not only whether it ran: ✓ correct, ◐ partly right, ✗ wrong or failed,
○ finished without an expected answer, … incomplete and unscored.
"""

from __future__ import annotations

from typing import Any, Optional

MEAN_SCORE = "mean score"
EFFICIENCY = "efficiency: mean score per 1,000 tokens (mean score × 1000 / avg tokens per case)"
MARKS = {"correct": ("✓", "green"), "partial": ("◐", "yellow"), "wrong": ("✗", "red"), "unscored": ("○", "default"),
         "incomplete": ("…", "yellow")}
MARK_LEGEND = "✓ correct · ◐ partly right · ✗ wrong or failed · ○ no expected answer · … incomplete"


def verdict(case: Any) -> str:
    """``correct``, ``partial``, ``wrong``, ``unscored`` or ``incomplete`` for a CaseResult."""
    if case.score is None:
        if case.status == "error":
            return "wrong"
        return "unscored" if case.status == "completed" else "incomplete"
    if case.correct or case.score >= 1.0:
        return "correct"
    return "partial" if case.score > 0 else "wrong"


def mark(case: Any) -> tuple[str, str]:
    """The case's mark and its colour."""
    return MARKS[verdict(case)]


def score_text(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def overall_line(m: Any) -> str:
    """The one-line overview of an Aggregate, each figure named for what it is."""
    return (f"{MEAN_SCORE} {score_text(m.accuracy)} · correct {m.correct}/{m.scored} (full score) · "
            f"completed {m.completed}/{m.cases} · avg reward {m.avg_reward:.3f} · avg steps {m.avg_steps:.2f} · "
            f"tokens {m.tokens.total:,} · latency p50/p95/p99 "
            f"{m.latency_s.p50:.2f}/{m.latency_s.p95:.2f}/{m.latency_s.p99:.2f} s")
