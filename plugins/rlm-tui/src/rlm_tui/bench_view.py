"""Benchmarks: the presets, a running benchmark's progress, the leaderboard with a bar chart, a report.

Everything comes from the rlm-bench plugin's commands run in a subprocess (``rlm_tui.bench``), so this view
works — and says what to install — without the plugin. Enter on a preset runs it (``/rlm bench preset=…
limit=N`` runs the first N cases); ``l`` reloads the leaderboard, ``m`` cycles its metric.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static, TabbedContent, TabPane

from rlm_tui.bench import BenchProgress, chart
from rlm_tui.render import clean, one_line

METRICS = ("accuracy", "avg_reward", "completion_rate", "efficiency", "avg_tokens", "avg_cost")


def case_count(preset: dict[str, Any]) -> int:
    cases = preset.get("cases")
    return len(cases) if isinstance(cases, list) else int(cases or 0)


class BenchView(Vertical):
    BINDINGS = [Binding("l", "leaderboard", "Leaderboard"), Binding("m", "metric", "Metric"),
                Binding("x", "stop", "Stop bench")]  # fmt: skip
    DEFAULT_CSS = """
    BenchView DataTable { height: 1fr; }
    BenchView #bench-status { height: auto; }
    BenchView #chart-box { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.presets: list[dict[str, Any]] = []
        self.metric = "accuracy"
        self.rows: list[dict[str, Any]] = []
        self.progress: Optional[BenchProgress] = None

    def compose(self) -> ComposeResult:
        with TabbedContent(id="bench-tabs"):
            with TabPane("Presets", id="tab-presets"):
                table: DataTable = DataTable(id="presets", cursor_type="row")
                table.add_columns("preset", "cases", "source", "description")
                yield table
            with TabPane("Progress", id="tab-progress"):
                yield Static("no benchmark running: enter on a preset, or /rlm bench preset=NAME", id="bench-status",
                             markup=False)
                yield ProgressBar(id="bench-bar", show_eta=False)
                with VerticalScroll():
                    yield Static(id="bench-log", markup=False)
            with TabPane("Leaderboard", id="tab-leaderboard"):
                board: DataTable = DataTable(id="board", cursor_type="row")
                board.add_columns("#", "preset", "model", "mode", "cases", "score", "reward", "tokens", "cost")
                yield board
                with VerticalScroll(id="chart-box"):
                    yield Static(id="chart", markup=False)
            with TabPane("Report", id="tab-report"):
                with VerticalScroll():
                    yield Static("/rlm bench report candidate=ID baseline=ID", id="report", markup=False)

    def show_presets(self, presets: list[dict[str, Any]]) -> None:
        self.presets = presets
        table = self.query_one("#presets", DataTable)
        table.clear()
        for preset in presets:
            table.add_row(Text(clean(preset.get("name"))), str(case_count(preset)),
                          Text(one_line(preset.get("source"), 14)), Text(one_line(preset.get("description"), 70)),
                          key=str(preset.get("name")))  # fmt: skip

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        if message.data_table.id == "presets":
            message.stop()
            self.app.run_bench({"preset": str(message.row_key.value)})  # type: ignore[attr-defined]

    def show_progress(self, progress: BenchProgress) -> None:
        self.progress = progress
        self.query_one("#bench-tabs", TabbedContent).active = "tab-progress"
        bar = self.query_one("#bench-bar", ProgressBar)
        bar.update(total=progress.total or None, progress=progress.done)
        if progress.error:
            state = Text(clean(f"{progress.preset}: {progress.error}"), style="red")
        elif progress.finished and progress.summary:
            metrics = progress.summary.get("metrics") or {}
            state = Text(clean(f"{progress.preset} done: {progress.summary.get('benchmark_id')} · score "
                               f"{metrics.get('accuracy')} · completed {metrics.get('completion_rate')}"), style="green")
        else:
            state = Text(clean(f"{progress.preset}: {progress.done} of {progress.total or '?'} cases…"), style="yellow")
        self.query_one("#bench-status", Static).update(state)
        self.query_one("#bench-log", Static).update(Text("\n".join(clean(line) for line in progress.lines)))

    def show_leaderboard(self, board: dict[str, Any]) -> None:
        self.rows = list(board.get("rows") or [])
        table = self.query_one("#board", DataTable)
        table.clear()
        for row in self.rows:
            cost = row.get("cost")
            table.add_row(Text(one_line(row.get("rank", ""), 6)), Text(one_line(row.get("preset"), 20)),
                          Text(one_line(row.get("model"), 20)), Text(one_line(row.get("mode"), 12)),
                          Text(one_line(row.get("cases", ""), 8)), _g(row.get("accuracy")), _g(row.get("avg_reward")),
                          _count(row.get("tokens")), f"${cost:.4f}" if _is_number(cost) else "—")  # fmt: skip
        lines = chart(self.rows, self.metric) if self.rows else ["no benchmark saved yet"]
        self.query_one("#chart", Static).update(Text(f"{self.metric}\n" + "\n".join(clean(x) for x in lines)))

    def show_report(self, text: str) -> None:
        self.query_one("#bench-tabs", TabbedContent).active = "tab-report"
        self.query_one("#report", Static).update(Text(clean(text)))

    def action_leaderboard(self) -> None:
        self.query_one("#bench-tabs", TabbedContent).active = "tab-leaderboard"
        self.app.load_leaderboard()  # type: ignore[attr-defined]

    def action_metric(self) -> None:
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]
        self.show_leaderboard({"rows": self.rows})

    def action_stop(self) -> None:
        if self.progress is not None and not self.progress.finished:
            self.progress.stop()
            self.app.say("benchmark stopped")  # type: ignore[attr-defined]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _g(value: Any) -> str:
    return f"{value:.3g}" if _is_number(value) else "—"


def _count(value: Any) -> str:
    """A count with thousands separators; anything else a row holds (a saved file is text) as a dash."""
    return f"{value:,}" if _is_number(value) else "—"
