"""The benchmark leaderboard: ``rlm leaderboard`` ranks saved benchmark summaries (pure functions, no I/O but loading).

One row per benchmark (``LeaderboardRow``). Metrics and their direction:

| metric | ranks by | better |
| --- | --- | --- |
| ``accuracy`` (alias ``score``) | mean score over scored cases (shown as SCORE) | higher |
| ``reward`` | average reward per case | higher |
| ``completion`` | completion rate | higher |
| ``efficiency`` | mean score per 1000 tokens (mean score × 1000 / avg tokens per case; shown as EFF) | higher |
| ``steps`` | average steps per case | lower |
| ``tokens`` | average tokens per case (so benchmarks of different sizes compare fairly) | lower |
| ``cost`` | average cost per case (USD) | lower |
| ``duration`` | average case latency (seconds) | lower |

A benchmark without a value for the metric (no scored case, no price, no tokens) ranks last; ties keep the newest
benchmark first. Filters (``KEY=VALUE``): ``preset``, ``model``, ``mode``, ``environment``, ``sandbox`` (glob
patterns, case-insensitive; ``environment`` also matches any case's environment), ``tag`` (``KEY`` or
``KEY=VALUE``: some case carries the tag), ``min_cases``, ``since`` / ``until`` (ISO dates or datetimes, on
``started_at``; a bare ``until`` date includes the whole day), ``min_accuracy``, ``max_accuracy`` (on the mean
score; aliases ``min_score``, ``max_score``), ``min_reward``,
``max_reward``, ``min_completion`` (fractions, or percentages such as ``80%``).
"""

from __future__ import annotations

import csv
import fnmatch
import io
import statistics
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

from rlm_bench.labels import EFFICIENCY, MEAN_SCORE
from rlm_bench.summary import BenchmarkSummary
from rlm_host import RlmError
from rlm_host.sdk.commands import json_for_terminal
from rlm_host.sdk.embedding import parse_moment

# metric -> True when higher is better
METRICS: dict[str, bool] = {
    "accuracy": True, "reward": True, "completion": True, "efficiency": True,
    "steps": False, "tokens": False, "cost": False, "duration": False,
}
STRING_FILTERS = ("preset", "model", "mode", "environment", "sandbox", "tag")
NUMBER_FILTERS = ("min_cases", "min_accuracy", "max_accuracy", "min_reward", "max_reward", "min_completion")
DATE_FILTERS = ("since", "until")
FILTER_KEYS = (*STRING_FILTERS, *NUMBER_FILTERS, *DATE_FILTERS)
EXPORT_FORMATS = ("table", "json", "csv", "markdown")
TABLE_LEGEND = ("", "SCORE mean score over the scored cases (0-1) · REWARD avg reward per case · COMPL completion rate",
                f"EFF {EFFICIENCY}")


def label(metric: str) -> str:
    """The metric as a reader knows it (``accuracy`` is the mean score)."""
    return MEAN_SCORE if metric == "accuracy" else metric


class LeaderboardError(RlmError):
    exit_code = 2


@dataclass
class LeaderboardRow:
    """One benchmark's figures as ranked (``tokens`` and ``cost`` are totals; ``avg_*`` are per case)."""

    benchmark_id: str
    preset: str
    mode: str
    model: str
    environment: str
    sandbox: str
    started_at: str
    cases: int
    accuracy: Optional[float]
    avg_reward: float
    completion_rate: float
    avg_steps: float
    tokens: int
    avg_tokens: float
    cost: Optional[float]
    avg_cost: Optional[float]
    p50_latency_s: float
    avg_latency_s: float
    efficiency: Optional[float]
    rank: int = 0
    environments: list[str] = field(default_factory=list, repr=False)
    tags: dict[str, list[str]] = field(default_factory=dict, repr=False)
    started: Optional[datetime] = field(default=None, repr=False)

    def metric(self, name: str) -> Optional[float]:
        return {
            "accuracy": self.accuracy, "reward": self.avg_reward, "completion": self.completion_rate,
            "efficiency": self.efficiency, "steps": self.avg_steps, "tokens": self.avg_tokens if self.cases else None,
            "cost": self.avg_cost, "duration": self.avg_latency_s if self.cases else None,
        }[name]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for private in ("environments", "tags", "started"):
            data.pop(private)
        return {"rank": data.pop("rank"), **data}


def efficiency(mean_score: Optional[float], avg_tokens: float) -> Optional[float]:
    """Mean score per 1000 tokens: right answers for the tokens (not the step reward, which any final answer
    earns); None without a scored case or a counted token."""
    return round(mean_score * 1000 / avg_tokens, 6) if mean_score is not None and avg_tokens > 0 else None


def row_from_summary(summary: BenchmarkSummary) -> LeaderboardRow:
    m = summary.metrics
    environments = sorted({c.environment for c in summary.cases if c.environment})
    tags: dict[str, set[str]] = {}
    for case in summary.cases:
        for key, value in case.tags.items():
            tags.setdefault(key, set()).add(value)
    started = summary.started_at if summary.started_at.tzinfo else summary.started_at.replace(tzinfo=timezone.utc)
    return LeaderboardRow(
        benchmark_id=summary.benchmark_id, preset=summary.preset, mode=summary.mode, model=summary.model or "",
        environment=summary.environment or ",".join(environments), sandbox=summary.sandbox or "",
        started_at=started.isoformat(), cases=m.cases, accuracy=m.accuracy, avg_reward=m.avg_reward,
        completion_rate=m.completion_rate, avg_steps=m.avg_steps, tokens=m.tokens.total, avg_tokens=m.avg_tokens,
        cost=m.cost, avg_cost=round(m.cost / m.cases, 8) if m.cost is not None and m.cases else None,
        p50_latency_s=m.latency_s.p50, avg_latency_s=m.latency_s.avg, efficiency=efficiency(m.accuracy, m.avg_tokens),
        environments=sorted({*environments, *([summary.environment] if summary.environment else [])}),
        tags={k: sorted(v) for k, v in tags.items()}, started=started,
    )


def check_metric(metric: str) -> str:
    name = metric.strip().lower().replace("-", "_")
    name = {"completion_rate": "completion", "avg_reward": "reward", "latency": "duration", "score": "accuracy",
            "mean_score": "accuracy"}.get(name, name)
    if name not in METRICS:
        raise LeaderboardError(f"unknown metric {metric!r}", hint="choose one of: " + ", ".join(METRICS))
    return name


@dataclass
class LeaderboardFilter:
    """Which benchmarks to rank (see the module docstring); ``None`` fields do not filter."""

    preset: Optional[str] = None
    model: Optional[str] = None
    mode: Optional[str] = None
    environment: Optional[str] = None
    sandbox: Optional[str] = None
    tag: Optional[str] = None
    min_cases: Optional[int] = None
    min_accuracy: Optional[float] = None
    max_accuracy: Optional[float] = None
    min_reward: Optional[float] = None
    max_reward: Optional[float] = None
    min_completion: Optional[float] = None
    since: Optional[datetime] = None
    until: Optional[datetime] = None

    def matches(self, row: LeaderboardRow) -> bool:
        def like(pattern: Optional[str], *values: str) -> bool:
            return pattern is None or any(fnmatch.fnmatchcase(v.lower(), pattern.lower()) for v in values)

        if not (like(self.preset, row.preset) and like(self.model, row.model) and like(self.mode, row.mode)
                and like(self.environment, row.environment, *row.environments) and like(self.sandbox, row.sandbox)):
            return False
        if self.tag is not None:
            key, _, value = self.tag.partition("=")
            if key not in row.tags or (value and not any(fnmatch.fnmatchcase(v, value) for v in row.tags[key])):
                return False
        if self.min_cases is not None and row.cases < self.min_cases:
            return False
        if self.min_accuracy is not None and (row.accuracy is None or row.accuracy < self.min_accuracy):
            return False
        if self.max_accuracy is not None and (row.accuracy is None or row.accuracy > self.max_accuracy):
            return False
        if self.min_reward is not None and row.avg_reward < self.min_reward:
            return False
        if self.max_reward is not None and row.avg_reward > self.max_reward:
            return False
        if self.min_completion is not None and row.completion_rate < self.min_completion:
            return False
        if row.started is not None:
            if self.since is not None and row.started < self.since:
                return False
            if self.until is not None and row.started >= self.until:
                return False
        return True


def _fraction(key: str, text: str) -> float:
    raw = text.strip()
    try:
        value = float(raw.rstrip("%")) / (100 if raw.endswith("%") else 1)
    except ValueError:
        raise LeaderboardError(f"filter {key}: {text!r} is not a number", hint=f"e.g. {key}=0.8 or {key}=80%") from None
    return value


def parse_filters(items: Iterable[str]) -> LeaderboardFilter:
    """A filter from ``KEY=VALUE`` strings (an unknown key or a bad value raises an ``RlmError`` exiting 2; dates
    are read by the kit's ``parse_moment``, as ``rlm runs list --filter`` reads them)."""
    result = LeaderboardFilter()
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        key = {"env": "environment", "tags": "tag", "min_completion_rate": "min_completion",
               "min_score": "min_accuracy",
               "max_score": "max_accuracy"}.get(key, key)
        if not sep or key not in FILTER_KEYS:
            problem = f"unknown filter key {key!r}" if sep else f"filter {item!r} is not KEY=VALUE"
            raise LeaderboardError(problem, hint="valid keys: " + ", ".join(FILTER_KEYS))
        if key in STRING_FILTERS:
            setattr(result, key, value.strip())
        elif key == "min_cases":
            try:
                result.min_cases = int(value)
            except ValueError:
                raise LeaderboardError(f"filter min_cases: {value!r} is not a whole number") from None
        elif key in NUMBER_FILTERS:
            setattr(result, key, _fraction(key, value))
        else:
            setattr(result, key, parse_moment(key, value))
    return result


def rank(
    summaries: Iterable[BenchmarkSummary], metric: str = "accuracy", where: Optional[LeaderboardFilter] = None,
    limit: Optional[int] = None,
) -> list[LeaderboardRow]:
    """Rows of the benchmarks passing ``where``, best first by ``metric`` (missing values last), ranks from 1."""
    name = check_metric(metric)
    rows = [row_from_summary(s) for s in summaries]
    rows = [r for r in rows if where is None or where.matches(r)]
    rows.sort(key=lambda r: r.benchmark_id, reverse=True)  # ties: newest first (sort is stable)
    return ranked(rows, name, METRICS[name], limit)


def ranked(rows: list[Any], metric: str, higher: bool, limit: Optional[int]) -> list[Any]:
    """``rows`` (each with ``metric(name)`` and ``rank``) best first by ``metric``, missing values last, the order
    they came in kept between ties, cut to ``limit``, ranked from 1."""
    rows.sort(key=lambda r: (r.metric(metric) is None, 0.0 if r.metric(metric) is None
                             else (-r.metric(metric) if higher else r.metric(metric))))
    rows = rows[:limit] if limit else rows
    for i, row in enumerate(rows, 1):
        row.rank = i
    return rows


def load_summaries(paths: Sequence[Path],
                   on_error: Optional[Callable[[Path, str], None]] = None) -> list[BenchmarkSummary]:
    """The summaries in ``paths``; unreadable ones are skipped (reported to ``on_error``)."""
    from rlm_bench.store import load_summary

    found = []
    for path in paths:
        try:
            found.append(load_summary(path))
        except RlmError as exc:
            if on_error:
                on_error(path, exc.message)
    return found


# --- exports -------------------------------------------------------------------------------------------------

COLUMNS = ("rank", "benchmark_id", "preset", "mode", "model", "environment", "sandbox", "cases", "accuracy",
           "avg_reward", "completion_rate", "avg_steps", "tokens", "cost", "p50_latency_s", "efficiency")


def _fmt(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "completion_rate":
        return f"{100 * value:.1f}%"
    if name == "tokens":
        return f"{value:,}"
    if name == "cost":
        return f"${value:.4f}"
    if name in ("accuracy", "avg_reward", "efficiency"):
        return f"{value:.3f}"
    if name in ("avg_steps", "p50_latency_s"):
        return f"{value:.2f}"
    return str(value)


def statistics_block(rows: Sequence[LeaderboardRow], metric: str) -> dict[str, Optional[float]]:
    values = [v for v in (r.metric(metric) for r in rows) if v is not None]
    if not values:
        return {"count": 0, "mean": None, "median": None, "stdev": None, "min": None, "max": None}
    return {"count": len(values), "mean": round(statistics.fmean(values), 6),
            "median": round(statistics.median(values), 6),
            "stdev": round(statistics.stdev(values), 6) if len(values) > 1 else 0.0, "min": min(values),
            "max": max(values)}


def to_table(rows: Sequence[LeaderboardRow], metric: str) -> str:
    heads = ("#", "BENCHMARK", "PRESET", "MODE", "MODEL", "ENV", "SANDBOX", "CASES", "SCORE", "REWARD", "COMPL",
             "STEPS", "TOKENS", "COST", "P50 S", "EFF")
    cells = [[_fmt(c, getattr(r, c)) for c in COLUMNS] for r in rows]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(heads)]
    numeric = set(range(7, len(heads))) | {0}
    line = lambda values: "  ".join(v.rjust(w) if i in numeric else v.ljust(w)  # noqa: E731
                                    for i, (v, w) in enumerate(zip(values, widths))).rstrip()
    better = "higher" if METRICS[metric] else "lower"
    return "\n".join([f"ranked by {label(metric)} ({better} is better)", line(heads), *(line(c) for c in cells),
                      *TABLE_LEGEND]) + "\n"


def to_json(rows: Sequence[LeaderboardRow], metric: str) -> str:
    payload = {"metric": metric, "higher_is_better": METRICS[metric], "rows": [r.to_dict() for r in rows],
               "statistics": statistics_block(rows, metric)}
    return json_for_terminal(payload) + "\n"  # no C1 control of a run's text reaches a terminal


def to_csv(rows: Sequence[LeaderboardRow], metric: str) -> str:
    out = io.StringIO()
    columns = list(rows[0].to_dict()) if rows else ["rank", *COLUMNS[1:]]
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.to_dict().items()})
    return out.getvalue()


def to_markdown(rows: Sequence[LeaderboardRow], metric: str) -> str:
    heads = ("#", "benchmark", "preset", "mode", "model", "env", "sandbox", "cases", "mean score", "reward",
             "completion", "steps", "tokens", "cost", "p50 s", "efficiency")
    lines = [f"# Leaderboard by {label(metric)} ({'higher' if METRICS[metric] else 'lower'} is better)", "",
             "| " + " | ".join(heads) + " |", "| " + " | ".join("---:" if i in (0, *range(7, 16)) else "---"
                                                                 for i in range(len(heads))) + " |"]
    for r in rows:
        values = [_fmt(c, getattr(r, c)).replace("|", "\\|") for c in COLUMNS]
        values[1] = f"`{values[1]}`"
        lines.append("| " + " | ".join(values) + " |")
    stats = statistics_block(rows, metric)
    lines += ["", f"Efficiency: {EFFICIENCY.split(': ', 1)[1]}.", "", f"## Statistics of {label(metric)}", ""]
    if stats["count"]:
        lines.append(f"- mean {stats['mean']:.4f} · median {stats['median']:.4f} · std dev {stats['stdev']:.4f} · "
                     f"range {stats['min']:.4f} – {stats['max']:.4f} over {stats['count']} benchmark(s)")
    else:
        lines.append("- no benchmark has a value for this metric")
    return "\n".join(lines) + "\n"


def render(rows: Sequence[LeaderboardRow], metric: str, fmt: str = "table") -> str:
    renderers = {"table": to_table, "json": to_json, "csv": to_csv, "markdown": to_markdown}
    if fmt not in renderers:
        raise LeaderboardError(f"unknown format {fmt!r}", hint="choose one of: " + ", ".join(EXPORT_FORMATS))
    return renderers[fmt](rows, check_metric(metric))
