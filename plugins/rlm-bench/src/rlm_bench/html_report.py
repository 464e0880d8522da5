"""A self-contained HTML benchmark report: ``rlm bench report ID [ID …] --format html``.

One file with no external resource (no script, no web font, no remote image; a Content-Security-Policy forbids
any fetch): inline CSS, and SVG charts drawn here in Python:

- mean score against context length: one series per (mode, model), one point per distinct ``context_tokens`` of
  the series' scored cases (the mean score of the cases of that length);
- cost against context length (the mean case cost per length), or tokens when some case has no cost (or
  every cost is zero);

then, per benchmark, a summary table (overall metrics, by pack, by tag) and a table of its cases. Every text comes
from ``html.escape``: model answers are untrusted.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Callable, Optional, Sequence

from rlm_bench.html_kit import MARGIN, PALETTE, e, legend, page, plot_size, svg_open, x_label, y_axis
from rlm_bench.html_kit import num as _num
from rlm_bench.html_kit import pct as _pct
from rlm_bench.html_kit import tick_label as _tick_label
from rlm_bench.html_kit import ticks as _ticks
from rlm_bench.summary import Aggregate, BenchmarkSummary, CaseResult


# --- series -------------------------------------------------------------------------------------------------


def series_label(summary: BenchmarkSummary) -> str:
    return f"{summary.mode} · {summary.model or '?'}"


def group_series(summaries: Sequence[BenchmarkSummary]) -> dict[str, list[CaseResult]]:
    """Cases per (mode, model) series, in first-seen order."""
    groups: dict[str, list[CaseResult]] = {}
    for s in summaries:
        groups.setdefault(series_label(s), []).extend(s.cases)
    return groups


def points(cases: Sequence[CaseResult], value: Callable[[CaseResult], Optional[float]]) -> list[tuple[int, float, int]]:
    """(context_tokens, mean value, cases) per distinct context length, over cases with a value."""
    by_length: dict[int, list[float]] = defaultdict(list)
    for c in cases:
        v = value(c)
        if v is not None:
            by_length[c.context_tokens].append(v)
    return [(x, sum(vs) / len(vs), len(vs)) for x, vs in sorted(by_length.items())]


def cost_measure(summaries: Sequence[BenchmarkSummary]) -> tuple[str, Callable[[CaseResult], Optional[float]]]:
    """Cost when every case has one (and some case cost anything: free models report 0), else tokens."""
    cases = [c for s in summaries for c in s.cases]
    if cases and all(c.cost is not None for c in cases) and any(c.cost for c in cases):
        return "cost (USD)", lambda c: c.cost
    return "tokens", lambda c: float(c.tokens.total)


# --- svg ----------------------------------------------------------------------------------------------------


def svg_chart(chart_id: str, title: str, y_label: str, series: dict[str, list[tuple[int, float, int]]],
              y_range: Optional[tuple[float, float]] = None,
              y_format: Callable[[float], str] = _tick_label) -> str:
    """A line chart with one polyline and one circle per point per series (x: context tokens, log scale when wide)."""
    all_points = [p for ps in series.values() for p in ps]
    plot_w, plot_h = plot_size()
    xs = [p[0] for p in all_points] or [0]
    ys = [p[1] for p in all_points] or [0.0]
    x_low, x_high = min(xs), max(xs)
    log_x = x_low > 0 and x_high / x_low > 20
    fx: Callable[[float], float] = (lambda v: math.log10(max(v, 1))) if log_x else float
    lo, hi = fx(x_low), fx(x_high)
    if hi <= lo:
        lo, hi = lo - 1, hi + 1
    y_lo, y_hi = y_range or (0.0, max(ys) * 1.1 if max(ys) > 0 else 1.0)

    def px(x: float) -> float:
        return MARGIN["left"] + (fx(x) - lo) / (hi - lo) * plot_w

    def py(y: float) -> float:
        return MARGIN["top"] + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h

    parts = [svg_open(chart_id, title), *y_axis(py, y_lo, y_hi, y_label, y_format)]
    x_ticks = sorted(set(xs)) if len(set(xs)) <= 8 else _ticks(x_low, x_high)
    for t in x_ticks:
        x = px(t)
        parts.append(f'<text x="{x:.1f}" y="{MARGIN["top"] + plot_h + 16}" font-size="11" text-anchor="middle">'
                     f"{e(_tick_label(t))}</text>")
    parts.append(x_label(f"context length (tokens{', log scale' if log_x else ''})"))
    for i, (label, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y, _ in pts)
        parts.append(f'<g class="series" data-series="{e(label)}">')
        if len(pts) > 1:
            parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y, n in pts:
            parts.append(f'<circle class="point" cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" fill="{color}" '
                         f'data-x="{x}" data-y="{y:.6g}"><title>{e(label)}: {x:,} tokens, {e(y_format(y))} '
                         f"({n} case{'s' if n != 1 else ''})</title></circle>")
        parts.append("</g>")
    parts.append("</svg>")
    return f'<figure><figcaption>{e(title)}</figcaption>{"".join(parts)}{legend(series)}</figure>'


# --- tables -------------------------------------------------------------------------------------------------

_AGG_HEAD = ("cases", "mean score", "correct/scored", "completion", "errors", "avg reward", "avg steps", "avg tokens",
             "total tokens", "cost $", "p50 s", "p95 s")


def _agg_cells(a: Aggregate) -> str:
    values = (str(a.cases), _num(a.accuracy), f"{a.correct}/{a.scored}", _pct(a.completion_rate), str(a.errors),
              _num(a.avg_reward), _num(a.avg_steps, 2), f"{a.avg_tokens:,.0f}", f"{a.tokens.total:,}", _num(a.cost, 4),
              _num(a.latency_s.p50, 2), _num(a.latency_s.p95, 2))
    return "".join(f'<td class="num">{e(v)}</td>' for v in values)


def _agg_table(css_class: str, first: str, rows: list[tuple[str, Aggregate]]) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in (first, *_AGG_HEAD))
    body = "".join(f"<tr><td>{e(label)}</td>{_agg_cells(a)}</tr>" for label, a in rows)
    return f'<table class="{css_class}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def summary_section(s: BenchmarkSummary) -> str:
    meta = (f"preset {s.preset} ({s.source}) · mode {s.mode} · framework {s.framework} · model {s.model or '-'}"
            + (f" · sub-model {s.sub_model}" if s.sub_model else "") + (f" · sandbox {s.sandbox}" if s.sandbox else "")
            + (f" · environment {s.environment}" if s.environment else "")
            + f" · started {s.started_at:%Y-%m-%d %H:%M:%S} UTC"
            + f" · finished {s.finished_at:%Y-%m-%d %H:%M:%S} UTC")
    parts = [f'<section class="benchmark" data-benchmark="{e(s.benchmark_id)}">',
             f"<h2>Benchmark {e(s.benchmark_id)}</h2>", f'<p class="meta">{e(meta)}</p>',
             f"<p>{e(s.description)}</p>" if s.description else "",
             "<h3>Summary</h3>", _agg_table("summary", "scope", [("overall", s.metrics)]),
             "<h3>By pack</h3>", _agg_table("by-pack", "pack", list(s.by_pack.items()))]
    for key, groups in s.by_tag.items():
        parts += [f"<h3>By {e(key)}</h3>", _agg_table("by-tag", key, list(groups.items()))]
    parts += ["<h3>Cases</h3>", cases_table(s), "</section>"]
    return "".join(parts)


def cases_table(s: BenchmarkSummary) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("case", "status", "tags", "expected", "answer", "score", "steps",
                                             "tokens", "context tokens", "latency s"))
    rows = []
    for c in s.cases:
        tags = ", ".join(f"{k}={v}" for k, v in c.tags.items())
        rows.append(
            f'<tr class="case" data-case="{e(c.case_id)}"><td>{e(c.case_id)}</td>'
            f'<td class="status-{e(c.status)}">{e(c.status)}</td><td>{e(tags)}</td>'
            f'<td class="answer">{e(c.expected)}</td><td class="answer">{e(c.final_response or c.error)}</td>'
            f'<td class="num">{_num(c.score)}</td><td class="num">{c.steps}</td><td class="num">{c.tokens.total:,}</td>'
            f'<td class="num">{c.context_tokens:,}</td><td class="num">{c.duration_s:.2f}</td></tr>'
        )
    return f'<table class="cases"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


# --- page ---------------------------------------------------------------------------------------------------


def render_html(summaries: Sequence[BenchmarkSummary]) -> str:
    """The report page of one or more benchmarks (overlaid in the charts by mode and model)."""
    if not summaries:
        raise ValueError("render_html needs at least one benchmark summary")
    groups = group_series(summaries)
    accuracy = {label: points(cases, lambda c: c.score) for label, cases in groups.items()}
    cost_label, measure = cost_measure(summaries)
    costs = {label: points(cases, measure) for label, cases in groups.items()}
    title = ("Benchmark " + summaries[0].benchmark_id if len(summaries) == 1
             else f"{len(summaries)} benchmarks: " + ", ".join(s.benchmark_id for s in summaries))
    money = cost_label.startswith("cost")
    charts = [
        svg_chart("chart-accuracy", "Score against context length", "mean score", accuracy, (0.0, 1.0),
                  lambda v: f"{v:.2f}"),
        svg_chart("chart-cost", f"{'Cost' if money else 'Tokens'} against context length", cost_label, costs,
                  y_format=(lambda v: f"${v:.4f}") if money else _tick_label),
    ]
    body = f'<div class="charts">{"".join(charts)}</div>' + "".join(summary_section(s) for s in summaries)
    return page(title, body)
