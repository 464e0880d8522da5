"""Benchmark reports: ``rlm bench report [ID] --format markdown|csv|json [--baseline ID]``.

- markdown: the run's settings, the overall figures, mean score and correct count per pack and per tag, one row per
  case, and with a baseline the comparison's gates and case changes;
- csv: one row per case (with the baseline's status and score when a baseline is given);
- json: the summary itself (``BenchmarkSummary``), with ``comparison`` added when a baseline is given.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any, Optional

from rlm_host.sdk.commands import json_for_terminal

from rlm_bench.compare import Comparison
from rlm_bench.summary import Aggregate, BenchmarkSummary

FORMATS = ("markdown", "csv", "json")
#: how a summary field is named for a reader (the JSON keeps the field's name)
METRIC_NAMES = {"accuracy": "mean score (accuracy)"}
CSV_COLUMNS = (
    "case_id", "preset", "mode", "environment", "model", "status", "termination_reason", "scorer", "score", "correct",
    "expected", "final_response", "steps", "reward", "input_tokens", "output_tokens", "total_tokens", "cost",
    "duration_s", "context_tokens", "tags", "error",
)


def _num(value: Optional[float], digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _short(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = (text or "").replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _aggregate_row(label: str, a: Aggregate) -> str:
    return (
        f"| {label} | {a.cases} | {_num(a.accuracy)} | {a.correct}/{a.scored} | {_pct(a.completion_rate)} | "
        f"{_num(a.avg_reward)} | "
        f"{_num(a.avg_steps, 2)} | {a.avg_tokens:,.0f} | {_num(a.cost, 4)} | {_num(a.latency_s.p50, 2)} | "
        f"{_num(a.latency_s.p95, 2)} |"
    )


_AGG_HEAD = (
    "| {what} | cases | mean score | correct | completion | avg reward | avg steps | avg tokens | cost $ | p50 s "
    "| p95 s |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def markdown(summary: BenchmarkSummary, comparison: Optional[Comparison] = None) -> str:
    s, m = summary, summary.metrics
    lines = [
        f"# Benchmark {s.benchmark_id}",
        "",
        f"- preset: `{s.preset}` ({s.source}){' — ' + s.description if s.description else ''}",
        f"- mode: {s.mode} · framework: {s.framework} · model: {s.model or '-'}"
        + (f" · sub-model: {s.sub_model}" if s.sub_model else "") + (f" · sandbox: {s.sandbox}" if s.sandbox else ""),
        f"- started {s.started_at:%Y-%m-%d %H:%M:%S} UTC · finished {s.finished_at:%Y-%m-%d %H:%M:%S} UTC"
        + (f" · {s.resumed_cases} case(s) resumed" if s.resumed_cases else ""),
        "",
        "## Overall",
        "",
        f"mean score **{_num(m.accuracy)}** (the mean of the case scores, each 0-1) · correct {m.correct}/{m.scored} "
        f"(scored cases with the full score) · completion "
        f"{_pct(m.completion_rate)} ({m.completed}/{m.cases}, {m.errors} errors) · tokens {m.tokens.total:,} · "
        f"latency p50/p95/p99 {_num(m.latency_s.p50, 2)}/{_num(m.latency_s.p95, 2)}/{_num(m.latency_s.p99, 2)} s",
        "",
        _AGG_HEAD.format(what="pack"),
        *(_aggregate_row(f"`{name}`", agg) for name, agg in s.by_pack.items()),
    ]
    for key, groups in s.by_tag.items():
        lines += ["", f"### By {key}", "", _AGG_HEAD.format(what=key)]
        lines += [_aggregate_row(value, agg) for value, agg in groups.items()]
    lines += ["", "## Cases", "", "| case | status | score | answer | expected | steps | tokens | s |",
              "| --- | --- | ---: | --- | --- | ---: | ---: | ---: |"]
    for c in s.cases:
        lines.append(
            f"| `{c.case_id}` | {c.status} | {_num(c.score)} | {_short(c.final_response)} | {_short(c.expected)} | "
            f"{c.steps} | {c.tokens.total:,} | {c.duration_s:.2f} |"
        )
    if comparison is not None:
        lines += ["", *comparison_markdown(comparison)]
    return "\n".join(lines) + "\n"


def comparison_markdown(c: Comparison) -> list[str]:
    lines = [
        f"## Comparison with {c.baseline_id}: {'PASSED' if c.passed else 'FAILED'}",
        "",
        "| gate | result | value | threshold | rule |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for g in c.gates:
        verdict = "pass" if g.passed else "**FAIL**"
        lines.append(f"| {g.name} | {verdict} | {_num(g.value)} | {_num(g.threshold)} | {g.rule} |")
    lines += ["", "| metric | candidate | baseline | delta |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {METRIC_NAMES.get(name, name)} | {_num(d.candidate)} | {_num(d.baseline)} | {_num(d.delta)} |"
              for name, d in c.metrics.items()]
    if not c.same_preset:
        lines += ["", f"Note: different presets ({c.candidate_preset} vs {c.baseline_preset})."]
    if not c.same_instructions:
        lines += ["", "Note: the two ran with different instructions ([run] instructions): not the same experiment."]
    if c.changes:
        lines += ["", "| case | change | baseline | candidate |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{x.case_id}` | {x.kind} | {x.baseline_status} {_num(x.baseline_score)} | "
            f"{x.candidate_status} {_num(x.candidate_score)} |"
            for x in c.changes
        ]
    return lines


def to_csv(summary: BenchmarkSummary, baseline: Optional[BenchmarkSummary] = None) -> str:
    out = io.StringIO()
    columns = list(CSV_COLUMNS) + (["baseline_status", "baseline_score"] if baseline is not None else [])
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    base = {c.case_id: c for c in baseline.cases} if baseline is not None else {}
    for c in summary.cases:
        row = c.model_dump(mode="json")
        row.update(input_tokens=c.tokens.input, output_tokens=c.tokens.output, total_tokens=c.tokens.total,
                   expected=json.dumps(c.expected, ensure_ascii=False),
                   tags=";".join(f"{k}={v}" for k, v in c.tags.items()))
        if baseline is not None:
            old = base.get(c.case_id)
            row.update(baseline_status=old.status if old else "", baseline_score=old.score if old else "")
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in columns})
    return out.getvalue()


def to_json(summary: BenchmarkSummary, comparison: Optional[Comparison] = None) -> str:
    payload = summary.model_dump(mode="json")
    if comparison is not None:
        payload["comparison"] = comparison.model_dump(mode="json")
    return json_for_terminal(payload)  # no C1 control of a case's text reaches a terminal


def render(summary: BenchmarkSummary, fmt: str, comparison: Optional[Comparison] = None,
           baseline: Optional[BenchmarkSummary] = None) -> str:
    if fmt in ("markdown", "md"):
        return markdown(summary, comparison)
    if fmt == "csv":
        return to_csv(summary, baseline)
    if fmt == "json":
        return to_json(summary, comparison)
    raise ValueError(f"unknown report format {fmt!r} (choose one of: {', '.join(FORMATS)})")
