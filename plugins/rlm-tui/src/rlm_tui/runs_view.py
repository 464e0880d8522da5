"""The runs browser: every saved run of the home in a table, filtered by status, environment, model and date.

The filter line takes words: ``status=final`` (a termination reason, ``running`` or ``interrupted``),
``env=pure_rlm``, ``model=scripted``, ``since=2026-11-01``, ``until=2026-11-30``; any other word must appear in
the run's id or task. Runs registered as active (``ActiveRuns``) show as ``running``. Typing on the table goes to
the filter (every printable key but ``/`` and ``:``, which open the command line); down or enter in the filter
goes back to the table. Enter opens a run; ``ctrl+r`` reloads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from rlm_host import RlmError
from rlm_host.sdk.embedding import parse_moment

from rlm_tui.render import one_line

COLUMNS = ("run", "started", "status", "env", "model", "steps", "reward", "tokens", "cost", "time", "task")
FILTER_KEYS = {"status", "env", "environment", "model", "since", "until"}


class FilterError(ValueError):
    pass


@dataclass
class RunFilter:
    status: Optional[str] = None
    environment: Optional[str] = None
    model: Optional[str] = None
    # since / until as ``rlm runs list --filter`` reads them (the kit's parse_moment: a bare until date ends with
    # that day)
    since: Optional[datetime] = None
    until: Optional[datetime] = None
    words: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "RunFilter":
        found: dict[str, Any] = {}
        words = []
        for word in text.split():
            key, eq, value = word.partition("=")
            if not eq:
                words.append(word.lower())
                continue
            if key not in FILTER_KEYS:
                raise FilterError(f"unknown filter {key}= (use status=, env=, model=, since=, until=)")
            if key in ("since", "until"):
                try:
                    found[key] = parse_moment(key, value)
                except RlmError:
                    raise FilterError(f"{key}= takes a date YYYY-MM-DD (or an ISO datetime), not {value!r}") from None
            else:
                found["environment" if key == "env" else key] = value.lower()
        return cls(words=tuple(words), **found)

    def keep(self, run: Any, status: str) -> bool:
        if self.status and self.status != status:
            return False
        if self.environment and self.environment not in (run.environment or "").lower():
            return False
        if self.model and self.model not in (run.model or "").lower():
            return False
        started = run.started if isinstance(run.started, datetime) else None
        if self.since and (started is None or started < self.since):
            return False
        if self.until and (started is None or started >= self.until):
            return False
        haystack = f"{run.run_id} {run.task}".lower()
        return all(word in haystack for word in self.words)


def status_of(run: Any, active: set[str]) -> str:
    return "running" if run.run_id in active and run.interrupted else run.termination_reason


class RunsView(Vertical):
    """The saved runs of the home (newest first)."""

    BINDINGS = [Binding("ctrl+r", "reload", "Reload"), Binding("slash", "app.command_line", "Command", show=False)]
    #: keys that keep their meaning on the table; any other printable key is typed into the filter
    COMMAND_KEYS = ("/", ":")
    DEFAULT_CSS = """
    RunsView #filter { height: 1; border: none; padding: 0 1; }
    RunsView #runs-count { height: 1; color: $text-muted; }
    RunsView DataTable { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.runs: list[Any] = []
        self.shown: list[Any] = []
        self.active: set[str] = set()

    def compose(self) -> ComposeResult:
        hint = "filter: status=final env=pure_rlm model=… since=YYYY-MM-DD words…  (tab: the table)"
        yield Input(placeholder=hint, id="filter", select_on_focus=False)  # typing on the table goes on here
        yield Static(id="runs-count", markup=False)
        table: DataTable = DataTable(id="runs-table", cursor_type="row", zebra_stripes=True)
        table.add_columns(*COLUMNS)
        yield table

    def load(self, runs: list[Any], active: set[str]) -> None:
        self.runs, self.active = runs, active
        self.apply_filter(self.query_one("#filter", Input).value)

    def apply_filter(self, text: str) -> None:
        try:
            chosen = RunFilter.parse(text)
        except FilterError as exc:
            self.app.say(str(exc), error=True)  # type: ignore[attr-defined]
            return
        self.shown = [run for run in self.runs if chosen.keep(run, status_of(run, self.active))]
        table = self.query_one("#runs-table", DataTable)
        table.clear()
        for run in self.shown:
            table.add_row(*self._cells(run), key=run.run_id)
        self.query_one("#runs-count", Static).update(
            f"{len(self.shown)} of {len(self.runs)} runs · type to filter · enter: open · ctrl+r: reload")

    def _cells(self, run: Any) -> list[Any]:
        status = status_of(run, self.active)
        colour = {"final": "green", "running": "yellow", "interrupted": "red", "error": "red",
                  "cancelled": "magenta"}.get(status, "")
        started = run.started.strftime("%m-%d %H:%M") if isinstance(run.started, datetime) else "—"
        cost = f"${run.cost:.4f}" if isinstance(run.cost, (int, float)) else "—"
        seconds = f"{run.duration:.1f}s" if isinstance(run.duration, (int, float)) else "—"
        return [Text(one_line(run.run_id[-17:], 17)), started, Text(one_line(status, 12), style=colour),
                Text(one_line(run.environment, 12)), Text(one_line(run.model, 20)), str(run.steps),
                f"{run.total_reward:.2f}", f"{run.tokens:,}" if run.tokens is not None else "—", cost, seconds,
                Text(one_line(run.task, 60))]

    def on_input_changed(self, message: Input.Changed) -> None:
        if message.input.id == "filter":
            message.stop()
            self.apply_filter(message.value)

    def on_input_submitted(self, message: Input.Submitted) -> None:
        if message.input.id == "filter":
            message.stop()
            self.query_one("#runs-table").focus()

    def on_key(self, event: events.Key) -> None:
        """Type to filter: a printable key on the table (not a command key) goes into the filter, which takes the
        keyboard; down in the filter gives it back to the table."""
        table, line = self.query_one("#runs-table", DataTable), self.query_one("#filter", Input)
        if self.app.focused is table and event.is_printable and event.character not in self.COMMAND_KEYS:
            event.stop()
            event.prevent_default()
            line.focus()
            line.insert_text_at_cursor(event.character or "")
        elif self.app.focused is line and event.key == "down":
            event.stop()
            event.prevent_default()
            table.focus()

    def on_data_table_row_selected(self, message: DataTable.RowSelected) -> None:
        message.stop()
        self.app.open_run(str(message.row_key.value))  # type: ignore[attr-defined]

    def action_reload(self) -> None:
        self.app.show_runs()  # type: ignore[attr-defined]
