"""Benchmarks: the presets, a running benchmark's progress, the leaderboard with a bar chart, a report.

Everything comes from the rlm-bench plugin's commands run in a subprocess (``rlm_tui.bench``), so this view
works — and says what to install — without the plugin. Enter on a preset runs it (``/rlm bench preset=…
limit=N`` runs the first N cases); ``l`` reloads the leaderboard, ``m`` cycles its metric.

The leaderboard has two boards: the benchmarks (``rlm leaderboard``) and the saved runs (``rlm leaderboard
--runs``); ``r`` switches between them (``/leaderboard runs metric=… KEY=VALUE…`` opens the runs' one, filtered).
On the runs' board ``m`` ranks by the next metric (the command ranks again: ``reward``, ``accuracy``, then
``tokens``, ``cost``, ``seconds``, ``steps``, lower is better) and enter opens the run. A run's task, model and
labels are the text of whoever wrote the run: each cell is ``Text`` (never markup), control characters shown.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import DataTable, ProgressBar, Static, TabbedContent, TabPane

from rlm_tui.bench import METRICS, RUN_METRICS, BenchProgress, chart, run_label
from rlm_tui.render import clean, one_line

RUNS, BENCHMARKS = "runs", "benchmarks"
#: The message line under the runs' leaderboard.
RUNS_KEYS = "m next metric · r benchmarks · enter opens a run"


def case_count(preset: dict[str, Any]) -> int:
    cases = preset.get("cases")
    return len(cases) if isinstance(cases, list) else int(cases or 0)


class BenchView(Vertical):
    BINDINGS = [Binding("l", "leaderboard", "Leaderboard"), Binding("r", "board", "Runs/benchmarks"),
                Binding("m", "metric", "Metric"), Binding("x", "stop", "Stop bench")]
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
        self.board = BENCHMARKS  # the leaderboard shown: BENCHMARKS or RUNS
        self.run_metric = "reward"
        self.run_filters: tuple[str, ...] = ()
        self.run_board: dict[str, Any] = {}  # the last answer of rlm leaderboard --runs ({}: none yet)

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
                runs: DataTable = DataTable(id="run-board", cursor_type="row")
                runs.add_columns("#", "task", "reward", "accuracy", "tokens", "cost", "seconds", "steps", "status",
                                 "model", "started", "run", "labels")
                runs.display = False
                yield runs
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
                          key=str(preset.get("name")))

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        if message.data_table.id == "presets":
            message.stop()
            self.app.run_bench({"preset": str(message.row_key.value)})  # type: ignore[attr-defined]
        elif message.data_table.id == "run-board":
            message.stop()
            self.app.open_run(str(message.row_key.value))  # type: ignore[attr-defined]

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
                               f"{metrics.get('accuracy')} · completed {metrics.get('completion_rate')}"),
                         style="green")
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
                          _count(row.get("tokens")), f"${cost:.4f}" if _is_number(cost) else "—")
        if self.board == BENCHMARKS:
            lines = chart(self.rows, self.metric) if self.rows else ["no benchmark saved yet"]
            self.query_one("#chart", Static).update(Text(f"{self.metric}\n" + "\n".join(clean(x) for x in lines)))

    def show_run_board(self, board: dict[str, Any], request: Optional[tuple[str, tuple[str, ...]]] = None) -> None:
        """``rlm leaderboard --runs --json``'s answer: the ranked runs in their table, the chart of its metric. The
        answer to an older ``request`` (metric, filters) than the one now chosen (``m`` pressed again) is dropped."""
        if request is not None and request != (self.run_metric, self.run_filters):
            return
        self.run_board = board
        table = self.query_one("#run-board", DataTable)
        table.clear()
        rows = [row for row in board.get("rows") or [] if isinstance(row, dict)]
        for row in rows:
            table.add_row(*run_cells(row), key=str(row.get("run_id")))
        if self.board == RUNS:
            self.query_one("#chart", Static).update(Text("\n".join(clean(line) for line in self.run_chart(rows))))

    def run_chart(self, rows: list[dict[str, Any]]) -> list[str]:
        """The runs' chart: what they are ranked by (and filtered on), the command's statistics, a bar a run."""
        better = "higher" if self.run_board.get("higher_is_better", self.run_metric in ("reward", "accuracy")) \
            else "lower"
        head = [f"runs ranked by {self.run_metric} ({better} is better)" + "".join(f" · {x}" for x in self.run_filters)]
        stats = got if isinstance(got := self.run_board.get("statistics"), dict) else {}
        figures = [f"{name} {_figure(self.run_metric, stats.get(name))}" for name in ("mean", "median", "min", "max")
                   if _is_number(stats.get(name))]
        head += [" · ".join(figures)] if figures else []
        if not rows:
            return [*head, "no saved run" + (" matches the filters" if self.run_filters else " yet")]
        return [*head, *chart(rows, self.run_metric, width=24, label=run_label)]

    def show_board(self, board: str) -> None:
        """Show the benchmarks' leaderboard (``BENCHMARKS``) or the runs' (``RUNS``), as last loaded."""
        self.board = board
        self.query_one("#board", DataTable).display = board == BENCHMARKS
        self.query_one("#run-board", DataTable).display = board == RUNS
        if board == RUNS and self.run_board:
            self.show_run_board(self.run_board)
        elif board == RUNS:
            self.query_one("#chart", Static).update(Text(f"runs ranked by {self.run_metric}: loading…"))
        else:
            self.show_leaderboard({"rows": self.rows})

    def show_report(self, text: str) -> None:
        self.query_one("#bench-tabs", TabbedContent).active = "tab-report"
        self.query_one("#report", Static).update(Text(clean(text)))

    def action_leaderboard(self) -> None:
        self.query_one("#bench-tabs", TabbedContent).active = "tab-leaderboard"
        self.app.load_leaderboard()  # type: ignore[attr-defined]

    def action_board(self) -> None:
        """``r``: the runs' leaderboard, or back to the benchmarks' (each loaded again)."""
        self.show_board(RUNS if self.board == BENCHMARKS else BENCHMARKS)
        self.action_leaderboard()
        self.query_one("#run-board" if self.board == RUNS else "#board", DataTable).focus()

    def action_metric(self) -> None:
        if self.board == RUNS:  # the runs are ranked by the metric: the command ranks them again
            self.run_metric = RUN_METRICS[(RUN_METRICS.index(self.run_metric) + 1) % len(RUN_METRICS)]
            self.query_one("#chart", Static).update(Text(f"runs ranked by {self.run_metric}: loading…"))
            self.app.say(f"runs ranked by {self.run_metric} · {RUNS_KEYS}")  # type: ignore[attr-defined]
            self.app.load_leaderboard()  # type: ignore[attr-defined]
            return
        self.metric = METRICS[(METRICS.index(self.metric) + 1) % len(METRICS)]
        self.show_leaderboard({"rows": self.rows})

    def action_stop(self) -> None:
        if self.progress is not None and not self.progress.finished:
            self.progress.stop()
            self.app.say("benchmark stopped")  # type: ignore[attr-defined]


def run_cells(row: dict[str, Any]) -> list[Any]:
    """A ranked run's cells: its text (task, model, labels, id) as ``Text`` cut to one line, figures formatted."""
    labels = got if isinstance(got := row.get("labels"), dict) else {}
    cost, started = row.get("cost"), str(row.get("started") or "")[:16].replace("T", " ")
    return [Text(one_line(row.get("rank", ""), 6)), Text(one_line(row.get("task"), 28)), _g(row.get("reward")),
            _g(row.get("accuracy")), _count(row.get("tokens")), f"${cost:.4f}" if _is_number(cost) else "—",
            _g(row.get("seconds")), Text(one_line(row.get("steps", ""), 6)), Text(one_line(row.get("status"), 12)),
            Text(one_line(row.get("model"), 24)), Text(one_line(started, 16)), Text(one_line(row.get("run_id"), 40)),
            Text(one_line(" ".join(f"{k}={v}" for k, v in labels.items()), 60))]


def _figure(metric: str, value: Any) -> str:
    """A statistic of the runs' metric as its column shows it: tokens counted, cost in dollars, else 3 digits."""
    if metric == "tokens" and _is_number(value):
        return f"{value:,.0f}"
    if metric == "cost" and _is_number(value):
        return f"${value:.4f}"
    return _g(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _g(value: Any) -> str:
    return f"{value:.3g}" if _is_number(value) else "—"


def _count(value: Any) -> str:
    """A count with thousands separators; anything else a row holds (a saved file is text) as a dash."""
    return f"{value:,}" if _is_number(value) else "—"
