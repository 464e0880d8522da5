"""The report of a sweep: ``rlm bench sweep-report SWEEP_ID [--format md|html] [--output FILE]``.

Read from the sweep's record (``<home>/sweeps/<sweep_id>.json``) and the cases its points saved in the bench store,
so a sweep still running, interrupted or stopped by a budget is reported too: a point counts its finished cases and
is marked partial.

- the sweep: its status, why it stopped (a budget, lost cases), what it spent, and the cases each node ran;
- overall figures, then a table per axis (preset, model, framework, environment, sandbox, instructions) with more
  than one value in the grid: cases, completion rate, mean score (accuracy), mean cost per case, tokens,
  p50 / p90 latency;
- model × framework: mean score against mean cost per case (tokens per case when some case has no cost, or every
  cost is zero); latency per framework (min, quartiles, p90, max); one row per point.

The HTML page (``--format html``) is self-contained like ``rlm bench report --format html`` (``rlm_bench.html_kit``):
an accuracy-against-cost scatter per model × framework, latency box plots per framework and completion-rate bars
per framework, drawn as inline SVG, then the tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence

import typer

from rlm_bench.html_kit import MARGIN, color, e, legend, num, page, pct, plot_size, svg_open, tick_label
from rlm_bench.html_kit import x_label, y_axis
from rlm_bench.summary import CaseResult, percentile
from rlm_bench.sweep.file import AXES

FORMATS = ("md", "markdown", "html")
AXIS_TITLES = {"preset": "Preset", "model": "Model", "framework": "Framework", "environment": "Environment",
               "sandbox": "Sandbox", "instructions": "Instructions"}


# ---------------------------------------------------------------------------------------------------- data


@dataclass
class PointData:
    """One point of the sweep with the cases it has saved so far."""

    key: str
    benchmark_id: str
    values: dict[str, str]  # axis → the value shown (as configured / as resolved when the grid left it open)
    repeat: int
    planned: int
    cases: list[CaseResult]

    @property
    def partial(self) -> bool:
        return len(self.cases) < self.planned


@dataclass
class Row:
    """Figures over a group of points' finished cases."""

    label: str
    points: int
    partial_points: int
    planned: int
    cases: int
    completed: int
    errors: int
    accuracy: Optional[float]
    scored: int
    cost_per_case: Optional[float]  # None: no case has a cost
    priced: bool  # every case has a cost
    tokens: int
    p50: Optional[float]
    p90: Optional[float]

    @property
    def completion(self) -> Optional[float]:
        return self.completed / self.cases if self.cases else None

    @property
    def tokens_per_case(self) -> Optional[float]:
        return self.tokens / self.cases if self.cases else None


def row(label: str, points: Sequence[PointData]) -> Row:
    cases = [c for p in points for c in p.cases]
    scores = [c.score for c in cases if c.score is not None]
    costs = [c.cost for c in cases if c.cost is not None]
    durations = [c.duration_s for c in cases]
    return Row(label=label, points=len(points), partial_points=sum(p.partial for p in points),
               planned=sum(p.planned for p in points), cases=len(cases), completed=sum(c.completed for c in cases),
               errors=sum(c.status == "error" for c in cases),
               accuracy=sum(scores) / len(scores) if scores else None, scored=len(scores),
               cost_per_case=sum(costs) / len(costs) if costs else None,
               priced=bool(cases) and len(costs) == len(cases), tokens=sum(c.tokens.total for c in cases),
               p50=percentile(durations, 50) if durations else None,
               p90=percentile(durations, 90) if durations else None)


@dataclass
class SweepData:
    record: Any  # SweepRecord
    points: list[PointData]
    record_path: Path

    @property
    def planned(self) -> int:
        return sum(p.planned for p in self.points)

    @property
    def finished(self) -> int:
        return sum(len(p.cases) for p in self.points)

    def axes(self) -> list[str]:
        """The axes with more than one value among the points."""
        return [axis for axis in AXES if len({p.values[axis] for p in self.points}) > 1]

    def groups(self, of: Callable[[PointData], str]) -> list[tuple[str, list[PointData]]]:
        found: dict[str, list[PointData]] = {}
        for point in self.points:
            found.setdefault(of(point), []).append(point)
        return list(found.items())

    def rows(self, axis: str) -> list[Row]:
        return [row(value, points) for value, points in self.groups(lambda p: p.values[axis])]

    def series(self) -> list[tuple[str, list[PointData]]]:
        """Points per model × framework."""
        return self.groups(lambda p: f"{p.values['model']} × {p.values['framework']}")

    def money(self) -> bool:
        """Costs are the measure: every finished case has one and some case cost anything (free models say 0)."""
        cases = [c for p in self.points for c in p.cases]
        return bool(cases) and all(c.cost is not None for c in cases) and any(c.cost for c in cases)


def _instructions_label(text: Optional[str]) -> str:
    if not text:
        return "(none)"
    line = " ".join(text.split())
    return line if len(line) <= 40 else line[:39] + "…"


def load(store: Any, ref: str) -> SweepData:
    """The sweep ``ref`` (id, unique prefix or ``latest``) with every point's saved cases."""
    record = store.load(ref)
    points = []
    for point in record.points:
        axis = point.point
        try:
            manifest = store.bench.load_manifest(point.benchmark_id)
            order = {case_id: i for i, case_id in enumerate(manifest.case_ids)}
        except Exception:  # noqa: BLE001 - a point that never started has no manifest: no cases yet
            manifest, order = None, {}
        found = store.bench.load_cases(point.benchmark_id)
        cases = sorted(found.values(), key=lambda c: order.get(c.case_id, len(order)))
        resolved = next((c for c in cases if c.model), None)
        values = {
            "preset": axis.get("preset") or (manifest.preset if manifest else "?"),
            "model": axis.get("model") or (resolved.model if resolved else "(configured)"),
            "framework": axis.get("framework") or "native",
            "environment": axis.get("environment") or "(each case's own)",
            "sandbox": axis.get("sandbox") or next((c.sandbox for c in cases if c.sandbox), "(configured)"),
            "instructions": _instructions_label(axis.get("instructions")),
        }
        points.append(PointData(key=point.key, benchmark_id=point.benchmark_id, values=values,
                                repeat=int(axis.get("repeat", 1)), planned=point.cases, cases=cases))
    return SweepData(record=record, points=points, record_path=store.path(record.sweep_id))


def latency_stats(cases: Iterable[CaseResult]) -> Optional[dict[str, float]]:
    durations = sorted(c.duration_s for c in cases)
    if not durations:
        return None
    return {"n": len(durations), "min": durations[0], "p25": percentile(durations, 25),
            "p50": percentile(durations, 50), "p75": percentile(durations, 75), "p90": percentile(durations, 90),
            "max": durations[-1]}


def status_lines(data: SweepData) -> list[tuple[str, str]]:
    """(what, text) pairs describing how the sweep went."""
    r = data.record
    missing = data.planned - data.finished
    out = [("status", r.status + (f" ({data.finished} of {data.planned} cases finished)" if missing else
                                  f" (all {data.planned} cases finished)")),
           ("spent", f"${r.spent_cost:.4f}, {r.spent_tokens:,} tokens"),
           ("executor", r.executor), ("file", r.file or "-"),
           ("started", f"{r.started_at:%Y-%m-%d %H:%M:%S} UTC, last update {r.updated_at:%Y-%m-%d %H:%M:%S} UTC"),
           ("points", f"{len(data.points)} ({sum(p.partial for p in data.points)} partial)")]
    if r.stopped:
        out.append(("stopped", r.stopped))
    elif r.status == "interrupted":
        out.append(("stopped", "interrupted (Ctrl-C) before every case ran"))
    if missing:
        out.append(("resume", f"rlm bench sweep --resume {r.sweep_id}"))
    return out


# ---------------------------------------------------------------------------------------------------- markdown


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _cost(value: Optional[float]) -> str:
    return "-" if value is None else f"${value:.4f}"


def _seconds(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}"


def _cases_cell(r: Row) -> str:
    text = f"{r.cases}" if r.cases == r.planned else f"{r.cases}/{r.planned}"
    return text + (f" (partial: {r.partial_points} of {r.points} points)" if r.partial_points else "")


ROW_HEAD = ("cases", "completion", "mean score", "cost/case", "tokens", "p50 s", "p90 s")


def _row_cells(r: Row) -> tuple[str, ...]:
    cost = _cost(r.cost_per_case) + ("" if r.priced or r.cost_per_case is None else " (some unpriced)")
    return (_cases_cell(r), pct(r.completion), num(r.accuracy), cost, f"{r.tokens:,}", _seconds(r.p50),
            _seconds(r.p90))


def _md_table(first: str, rows: Sequence[Row]) -> list[str]:
    lines = [f"| {first} | " + " | ".join(ROW_HEAD) + " |", "| --- |" + " ---: |" * len(ROW_HEAD)]
    lines += [f"| {_cell(r.label)} | " + " | ".join(_row_cells(r)) + " |" for r in rows]
    return lines


def markdown(data: SweepData) -> str:
    r = data.record
    lines = [f"# Sweep {r.sweep_id}" + (f": {r.name}" if r.name else ""), ""]
    lines += [f"- {what}: {text}" for what, text in status_lines(data)]
    lines += ["", "## Overall", "", *_md_table("scope", [row("all points", data.points)])]
    for axis in data.axes():
        lines += ["", f"## By {axis}", "", *_md_table(axis, data.rows(axis))]
    lines += ["", "## Model × framework", "", "mean score against mean cost per case (tokens per case when some "
              "case has no cost)", "",
              *_md_table("model × framework", [row(n, ps) for n, ps in data.series()])]
    lines += ["", "## Latency per framework (s)", "", "| framework | cases | min | p25 | p50 | p75 | p90 | max |",
              "| --- |" + " ---: |" * 7]
    for name, points in data.groups(lambda p: p.values["framework"]):
        stats = latency_stats(c for p in points for c in p.cases)
        if stats:
            lines.append(f"| {_cell(name)} | {stats['n']} | " + " | ".join(
                f"{stats[k]:.2f}" for k in ("min", "p25", "p50", "p75", "p90", "max")) + " |")
        else:
            lines.append(f"| {_cell(name)} | 0 |" + " - |" * 6)
    lines += ["", "## Nodes", "", "| node | cases | failed | case seconds |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| {_cell(node)} | {s.cases} | {s.failed} | {s.seconds:.2f} |" for node, s in sorted(r.nodes.items())]
    if not r.nodes:
        lines.append("| (none yet) | 0 | 0 | 0.00 |")
    lines += ["", "## Points", "", "| point | benchmark | state | " + " | ".join(ROW_HEAD) + " |",
              "| --- | --- | --- |" + " ---: |" * len(ROW_HEAD)]
    for p in data.points:
        state = "partial" if p.partial else "complete"
        lines.append(f"| {_cell(p.key)} | `{p.benchmark_id}` | {state} | "
                     + " | ".join(_row_cells(row(p.key, [p]))) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------- html


def _figure(title: str, parts: list[str], labels: Sequence[str] = ()) -> str:
    return (f'<figure><figcaption>{e(title)}</figcaption>{"".join(parts)}</svg>'
            + (legend(labels) if labels else "") + "</figure>")


def scatter_chart(data: SweepData) -> str:
    """Mean score against mean cost (or tokens) per case, one circle per model × framework."""
    money = data.money()
    measure: Callable[[Row], Optional[float]] = (lambda r: r.cost_per_case) if money else (lambda r: r.tokens_per_case)
    rows = [(i, row(name, points)) for i, (name, points) in enumerate(data.series())]
    shown = [(i, r, measure(r)) for i, r in rows if r.accuracy is not None and measure(r) is not None]
    x_name = "mean cost per case (USD)" if money else "mean tokens per case"
    x_fmt: Callable[[float], str] = (lambda v: f"${v:.4f}") if money else tick_label
    title = f"Mean score against {'cost' if money else 'tokens'} per case, per model × framework"
    plot_w, plot_h = plot_size()
    x_hi = max([x for _, _, x in shown if x is not None] + [0.0]) * 1.15 or 1.0
    x_lo = -0.04 * x_hi  # a point at zero cost stays off the frame

    def px(x: float) -> float:
        return MARGIN["left"] + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return MARGIN["top"] + plot_h - y * plot_h

    parts = [svg_open("chart-accuracy-cost", title), *y_axis(py, 0.0, 1.0, "mean score", lambda v: f"{v:.2f}")]
    for k in range(5):
        t = x_hi * k / 4
        anchor = "end" if k == 4 else "middle"
        parts.append(f'<text x="{px(t):.1f}" y="{MARGIN["top"] + plot_h + 16}" font-size="11" '
                     f'text-anchor="{anchor}">{e(x_fmt(t))}</text>')
    parts.append(x_label(x_name))
    for i, r, x in shown:  # later series drawn smaller, so equal points show as rings
        assert x is not None and r.accuracy is not None
        parts.append(f'<g class="series" data-series="{e(r.label)}"><circle class="point" cx="{px(x):.1f}" '
                     f'cy="{py(r.accuracy):.1f}" r="{max(3, 10 - 2 * i)}" fill="{color(i)}" stroke="#333" '
                     f'data-x="{x:.6g}" '
                     f'data-y="{r.accuracy:.6g}"><title>{e(r.label)}: mean score {r.accuracy:.3f}, {e(x_fmt(x))} '
                     f"per case ({r.cases} cases)</title></circle></g>")
    return _figure(title, parts, [r.label for _, r in rows])


def latency_chart(data: SweepData) -> str:
    """A box plot of case latency per framework: whiskers min–max, box p25–p75, a line at the median, a tick at p90."""
    groups = [(name, latency_stats(c for p in points for c in p.cases))
              for name, points in data.groups(lambda p: p.values["framework"])]
    title = "Case latency per framework (s)"
    plot_w, plot_h = plot_size()
    top = max([s["max"] for _, s in groups if s] + [0.0]) * 1.1 or 1.0

    def py(y: float) -> float:
        return MARGIN["top"] + plot_h - y / top * plot_h

    parts = [svg_open("chart-latency", title), *y_axis(py, 0.0, top, "seconds per case")]
    slot = plot_w / max(len(groups), 1)
    for i, (name, s) in enumerate(groups):
        centre = MARGIN["left"] + slot * (i + 0.5)
        half = min(slot * 0.3, 40)
        parts.append(f'<text x="{centre:.1f}" y="{MARGIN["top"] + plot_h + 16}" font-size="11" '
                     f'text-anchor="middle">{e(name)}</text>')
        if not s:
            continue
        c = color(i)
        parts.append(
            f'<g class="box" data-framework="{e(name)}" data-n="{s["n"]}" data-p50="{s["p50"]:.6g}">'
            f'<line x1="{centre:.1f}" x2="{centre:.1f}" y1="{py(s["min"]):.1f}" y2="{py(s["max"]):.1f}" stroke="{c}"/>'
            f'<rect x="{centre - half:.1f}" y="{py(s["p75"]):.1f}" width="{2 * half:.1f}" '
            f'height="{max(py(s["p25"]) - py(s["p75"]), 1):.1f}" fill="{c}" fill-opacity="0.35" stroke="{c}"/>'
            f'<line class="median" x1="{centre - half:.1f}" x2="{centre + half:.1f}" y1="{py(s["p50"]):.1f}" '
            f'y2="{py(s["p50"]):.1f}" stroke="{c}" stroke-width="3"/>'
            f'<line class="p90" x1="{centre - half / 2:.1f}" x2="{centre + half / 2:.1f}" y1="{py(s["p90"]):.1f}" '
            f'y2="{py(s["p90"]):.1f}" stroke="{c}" stroke-dasharray="3,2"/>'
            f'<title>{e(name)}: {s["n"]} cases, min {s["min"]:.2f} s, p25 {s["p25"]:.2f}, median {s["p50"]:.2f}, '
            f'p75 {s["p75"]:.2f}, p90 {s["p90"]:.2f}, max {s["max"]:.2f} s</title></g>'
        )
    parts.append(x_label("framework (box: p25–p75, thick line: median, dashed: p90, whiskers: min–max)"))
    return _figure(title, parts)


def completion_chart(data: SweepData) -> str:
    """Bars: the completion rate (cases with a final answer) of each framework's finished cases."""
    rows = [row(name, points) for name, points in data.groups(lambda p: p.values["framework"])]
    title = "Completion rate per framework"
    plot_w, plot_h = plot_size()

    def py(y: float) -> float:
        return MARGIN["top"] + plot_h - y * plot_h

    parts = [svg_open("chart-completion", title), *y_axis(py, 0.0, 1.0, "completion rate", pct)]
    slot = plot_w / max(len(rows), 1)
    for i, r in enumerate(rows):
        centre = MARGIN["left"] + slot * (i + 0.5)
        width = min(slot * 0.6, 80)
        rate = r.completion or 0.0
        parts.append(f'<text x="{centre:.1f}" y="{MARGIN["top"] + plot_h + 16}" font-size="11" '
                     f'text-anchor="middle">{e(r.label)}</text>')
        parts.append(f'<rect class="bar" data-framework="{e(r.label)}" data-rate="{rate:.6g}" '
                     f'x="{centre - width / 2:.1f}" y="{py(rate):.1f}" width="{width:.1f}" '
                     f'height="{max(py(0) - py(rate), 0):.1f}" fill="{color(i)}"><title>{e(r.label)}: '
                     f"{pct(r.completion)} of {r.cases} cases</title></rect>")
        parts.append(f'<text x="{centre:.1f}" y="{py(rate) - 4:.1f}" font-size="11" text-anchor="middle">'
                     f"{e(pct(r.completion))}</text>")
    parts.append(x_label("framework"))
    return _figure(title, parts)


def _html_table(css_class: str, first: str, rows: Sequence[Row]) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in (first, *ROW_HEAD))
    body = "".join(
        f'<tr class="{"partial" if r.partial_points else "complete"}"><td>{e(r.label)}</td>'
        + "".join(f'<td class="num">{e(v)}</td>' for v in _row_cells(r)) + "</tr>"
        for r in rows
    )
    return f'<table class="{e(css_class)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def render_html(data: SweepData) -> str:
    r = data.record
    title = f"Sweep {r.sweep_id}" + (f": {r.name}" if r.name else "")
    status = "".join(f"<tr><th>{e(what)}</th><td>{e(text)}</td></tr>" for what, text in status_lines(data))
    parts = [f'<table class="status" data-status="{e(r.status)}"><tbody>{status}</tbody></table>',
             '<div class="charts">', scatter_chart(data), latency_chart(data), completion_chart(data), "</div>",
             "<h2>Overall</h2>",
             _html_table("axis axis-overall", "scope", [row("all points", data.points)])]
    for axis in data.axes():
        parts += [f"<h2>By {e(axis)}</h2>", _html_table(f"axis axis-{axis}", axis, data.rows(axis))]
    parts += ["<h2>Model × framework</h2>",
              _html_table("series", "model × framework", [row(n, ps) for n, ps in data.series()])]
    nodes = "".join(f'<tr class="node"><td>{e(node)}</td><td class="num">{s.cases}</td><td class="num">{s.failed}'
                    f'</td><td class="num">{s.seconds:.2f}</td></tr>'
                    for node, s in sorted(r.nodes.items()))
    parts += ["<h2>Nodes</h2>", '<table class="nodes"><thead><tr><th>node</th><th>cases</th><th>failed</th>'
              f"<th>case seconds</th></tr></thead><tbody>{nodes}</tbody></table>"]
    head = "".join(f"<th>{e(h)}</th>" for h in ("point", "benchmark", "state", *ROW_HEAD))
    body = "".join(
        f'<tr class="point {"partial" if p.partial else "complete"}" data-benchmark="{e(p.benchmark_id)}">'
        f"<td>{e(p.key)}</td><td>{e(p.benchmark_id)}</td><td>{'partial' if p.partial else 'complete'}</td>"
        + "".join(f'<td class="num">{e(v)}</td>' for v in _row_cells(row(p.key, [p]))) + "</tr>"
        for p in data.points
    )
    parts += ["<h2>Points</h2>", f'<table class="points"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>']
    css = "table.status th { text-align: left; width: 90px; } tr.partial td:first-child { color: #a60; }"
    return page(title, "".join(parts), css)


# ---------------------------------------------------------------------------------------------------- command


def sweep_report(
    ctx: typer.Context,
    sweep_id: str = typer.Argument("latest", help="The sweep: its id, a unique prefix, or latest."),
    fmt: str = typer.Option("md", "--format", "-f", help="md (markdown) or html (a self-contained page with "
                            "charts)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here (default: stdout; an "
                                          "HTML report to a terminal is saved beside the sweep record)."),
) -> None:
    """Report a sweep (finished or not): how it went, a table per axis, and for html the charts (accuracy against
    cost per model × framework, latency and completion rate per framework)."""
    import sys

    from rlm_bench.sweep.record import SweepStore
    from rlm_host import CommandServices, InputError
    from rlm_host.sdk.commands import say

    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}", hint="choose md or html")
    store = SweepStore(CommandServices.of(ctx).home)
    data = load(store, sweep_id)
    text = render_html(data) if fmt == "html" else markdown(data)
    if output is None and fmt == "html" and sys.stdout.isatty():
        output = data.record_path.with_suffix(".html")
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text, encoding="utf-8")
    say(f"report: {output}", event="sweep report", path=str(output))
