"""The leaderboard of runs: ``rlm leaderboard --runs`` ranks individual saved runs (``rlm runs list``'s summaries).

Metrics and their direction: ``reward`` (the run's total reward), ``accuracy`` (its score, where it has one),
higher is better; ``tokens``, ``cost``, ``seconds``, ``steps``, lower is better. A run has a score when a benchmark
scored it (its labels ``benchmark_id`` and ``case``: the case's saved score) or when it carries an expected answer
(the label ``expected``: 1 when its answer matches after normalisation — case, punctuation and articles aside —
else 0). A run without a value for the metric ranks last; ties keep the newest run first. Filters are those of
``rlm runs list --filter``: model, environment, framework, label, status, since, until.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from typing import Any, Callable, Optional, Sequence

from rlm_bench.leaderboard import LeaderboardError, ranked, statistics_block
from rlm_host.sdk.commands import terminal_safe

#: metric → True when higher is better
RUN_METRICS: dict[str, bool] = {"reward": True, "accuracy": True, "tokens": False, "cost": False, "seconds": False,
                                "steps": False}
COLUMNS = ("rank", "run_id", "started", "status", "model", "environment", "framework", "steps", "reward", "accuracy",
           "tokens", "cost", "seconds", "task")


@dataclass
class RunRow:
    """One run as ranked."""

    run_id: str
    started: str
    status: str
    model: str
    environment: str
    framework: str
    steps: int
    reward: float
    accuracy: Optional[float]
    tokens: Optional[int]
    cost: Optional[float]
    seconds: Optional[float]
    task: str
    labels: dict[str, str]
    rank: int = 0

    def metric(self, name: str) -> Optional[float]:
        return {"reward": self.reward, "accuracy": self.accuracy, "tokens": self.tokens, "cost": self.cost,
                "seconds": self.seconds, "steps": self.steps}[name]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"rank": data.pop("rank"), **data}


def check_run_metric(metric: str) -> str:
    name = metric.strip().lower().replace("duration", "seconds").replace("score", "accuracy")
    if name not in RUN_METRICS:
        raise LeaderboardError(f"unknown metric {metric!r} for runs", hint="choose one of: " + ", ".join(RUN_METRICS))
    return name


def scorer(load_cases: Callable[[str], dict[str, Any]]) -> Callable[[Any], Optional[float]]:
    """A run summary's score: its benchmark case's saved score, else its ``expected`` label matched, else None.
    ``load_cases(benchmark_id)`` gives that benchmark's case results by case id (each loaded once)."""
    from rlm_bench.scorers import normalized_exact

    cache: dict[str, dict[str, Any]] = {}

    def score(summary: Any) -> Optional[float]:
        labels = summary.labels
        if "benchmark_id" in labels and "case" in labels:
            benchmark = labels["benchmark_id"]
            if benchmark not in cache:
                try:
                    cache[benchmark] = load_cases(benchmark)
                except Exception:  # noqa: BLE001 - a benchmark removed or unreadable: its runs have no score here
                    cache[benchmark] = {}
            case = cache[benchmark].get(labels["case"])
            if case is not None and getattr(case, "score", None) is not None and \
                    getattr(case, "run_id", None) in (None, summary.run_id):
                return float(case.score)
        if "expected" in labels:
            return normalized_exact(summary.answer, labels["expected"]).value if summary.answer is not None else 0.0
        return None

    return score


def rank_runs(summaries: Sequence[Any], metric: str, score: Callable[[Any], Optional[float]],
              limit: Optional[int] = None) -> list[RunRow]:
    """Rows of ``summaries``, best first by ``metric`` (missing values last), ranks from 1."""
    name = check_run_metric(metric)
    rows = [RunRow(s.run_id, s.started.isoformat(timespec="seconds") if s.started else "", s.termination_reason,
                   s.model, s.environment, s.framework, s.steps, s.total_reward, score(s), s.tokens, s.cost,
                   s.duration, s.task, dict(s.labels)) for s in summaries]
    rows.sort(key=lambda r: r.started, reverse=True)  # ties: newest first (sort is stable)
    return ranked(rows, name, RUN_METRICS[name], limit)


def _cell(name: str, value: Any) -> str:
    """A value as the table shows it; text from a run (its task, model, labels) with its control characters shown,
    never sent to the terminal (a run's record is read back from disk: it may be anyone's)."""
    return terminal_safe(_text(name, value))


def _text(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "tokens":
        return f"{value:,}"
    if name == "cost":
        return f"${value:.4f}"
    if name in ("reward", "accuracy"):
        return f"{value:.3f}"
    if name == "seconds":
        return f"{value:.2f}"
    if name == "started":
        return value[:16].replace("T", " ")
    if name == "task":
        return value if len(value) <= 40 else value[:39] + "…"
    return str(value)


def render_runs(rows: Sequence[RunRow], metric: str, fmt: str = "table") -> str:
    name = check_run_metric(metric)
    better = "higher" if RUN_METRICS[name] else "lower"
    if fmt == "json":
        stats = statistics_block(rows, name)  # type: ignore[arg-type]  # rows have metric(), as benchmark rows do
        payload = {"metric": name, "higher_is_better": RUN_METRICS[name], "rows": [r.to_dict() for r in rows],
                   "statistics": stats}
        return json.dumps(payload, indent=2) + "\n"  # ASCII: no control character of a run reaches the terminal
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=[*COLUMNS, "labels"], lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({**{c: "" if getattr(r, c) is None else getattr(r, c) for c in COLUMNS},
                             "labels": json.dumps(r.labels)})
        return out.getvalue()
    cells = [[_cell(c, getattr(r, c)) for c in COLUMNS] for r in rows]
    heads = [c.upper().replace("_", " ") for c in COLUMNS]
    if fmt == "markdown":
        lines = [f"# Runs ranked by {name} ({better} is better)", "", "| " + " | ".join(COLUMNS) + " |",
                 "| " + " | ".join("---" for _ in COLUMNS) + " |"]
        lines += ["| " + " | ".join(v.replace("|", "\\|") for v in row) + " |" for row in cells]
        return "\n".join(lines) + "\n"
    if fmt != "table":
        raise LeaderboardError(f"unknown format {fmt!r}", hint="choose one of: table, json, csv, markdown")
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(heads)]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths)).rstrip()  # noqa: E731
    legend = "ACCURACY: a benchmark's score of the run, or its `expected` label matched (- : none)"
    return "\n".join([f"runs ranked by {name} ({better} is better)", line(heads), *(line(c) for c in cells), "",
                      legend]) + "\n"
