"""The run view: one run's steps (a virtual list), the chosen step's detail, budget meters and the call in progress.

The same view shows a finished run and follows a live one: it reads the trajectory file through a
``TrajectoryIndex`` and, until the root run's ``final`` arrives, reads what was appended every tenth of a second
(the file is flushed after every event, whichever process writes it). Replay keys move the cursor: ``n``/``p``
next and previous step, ``g`` jump to a step number, ``e`` next error step, ``E`` errors only, ``f`` follow the
newest step, ``o`` open the step's first child run, ``backspace`` back to the parent run. A step that tried
several candidates (``--branch-width``) says so in its row and lists them in its detail, the kept one marked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.timer import Timer
from textual.widgets import Static

from rlm_tui.index import TrajectoryIndex
from rlm_tui.render import clean, one_line, step_detail, step_row
from rlm_tui.vlist import VirtualList

POLL_SECONDS = 0.1
#: A run without a final event counts as running while its process is registered as active, or while its file
#: grew in the last this many seconds (a run of another machine, or of a host without the registry).
QUIET_SECONDS = 30.0
#: Polls between two looks at the registry of active runs while nothing new arrives.
RECHECK_POLLS = 20
BAR = 12


def meter_text(label: str, used: float, limit: Optional[float], text: str) -> Text:
    """``steps [██████░░░░░░] 6/10``: a budget meter (no bar when the budget has no limit)."""
    line = Text(f"{label:<6} ")
    if limit:
        filled = min(BAR, round(BAR * used / limit))
        line.append("█" * filled, style="red" if used >= limit else "green")
        line.append("░" * (BAR - filled), style="dim")
    else:
        line.append(" " * BAR)
    line.append(f" {clean(text)}")  # the limits come from the run's settings: text of the file, as any other
    return line


#: One row of the step tree: (run id, the step's index in that run, depth below the run shown).
Entry = tuple[str, int, int]


class RunView(Vertical):
    """One run of a trajectory file (the root, or a child run with ``run_id``)."""

    BINDINGS = [
        Binding("n", "step(1)", "Next"),
        Binding("p", "step(-1)", "Prev"),
        Binding("g", "jump", "Jump"),
        Binding("e", "next_error", "Next error"),
        Binding("E", "errors_only", "Errors only"),
        Binding("f", "follow", "Follow"),
        Binding("o", "open_child", "Child run"),
        Binding("backspace", "parent", "Parent", show=False),
    ]
    DEFAULT_CSS = """
    RunView #run-title { height: 1; background: $boost; }
    RunView #meters { height: 2; }
    RunView #in-progress { height: 1; color: $warning; }
    RunView VirtualList { height: 2fr; border-top: solid $primary; }
    RunView #detail-box { height: 3fr; border-top: solid $primary; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index: Optional[TrajectoryIndex] = None
        self.run_id: Optional[str] = None
        self.rows: Optional[list[Entry]] = None  # None: row i is the run's step i (no child runs, no filter)
        self.errors_only = False
        self.opened_seconds: Optional[float] = None
        self._timer: Optional[Timer] = None
        self._alive = True  # the run's process is still at it (see QUIET_SECONDS)
        self._quiet_polls = 0
        self._shown_detail: Optional[tuple[str, int]] = None

    def compose(self) -> ComposeResult:
        yield Static(id="run-title", markup=False)
        yield Static(id="meters", markup=False)
        yield Static(id="in-progress", markup=False)
        yield VirtualList(self._row, id="steps")
        with VerticalScroll(id="detail-box"):
            yield Static(id="detail", markup=False)

    # ------------------------------------------------------------------ opening and following

    def open(self, path: Path, run_id: Optional[str] = None) -> None:
        """Show the run of ``path`` (its root, or child ``run_id``); follows it while it has no final event."""
        started = time.perf_counter()
        index = TrajectoryIndex(path)
        index.refresh()
        self.index, self.errors_only, self._shown_detail = index, False, None
        self.run_id = run_id or index.root_id
        self._rebuild()
        self._quiet_polls = 0
        self._alive = self._still_running()
        steps = self.query_one("#steps", VirtualList)
        steps.follow = not index.live.finished
        steps.count = 0
        steps.cursor = 0
        steps.set_count(self.count())  # a live run: the cursor goes to its newest step and stays there
        self._update()
        self.opened_seconds = time.perf_counter() - started
        if self._timer is None:
            self._timer = self.set_interval(POLL_SECONDS, self.poll)
        steps.focus()

    def poll(self) -> None:
        """Read what the run wrote since the last poll (nothing to do once it ended)."""
        if self.index is None or (self.index.live.finished and self._final_seen):
            return
        if not self.index.refresh():
            self._quiet_polls += 1
            if self._quiet_polls % RECHECK_POLLS == 0:
                self._alive = self._still_running()
        else:
            self._quiet_polls, self._alive = 0, True
            if self.run_id is None:  # opened before the run's first line reached the file
                self.run_id = self.index.root_id
            self._rebuild()
            self.query_one("#steps", VirtualList).set_count(self.count())
        self._update()

    def _still_running(self) -> bool:
        """Whether a run without its final event is still going: registered active, or its file grew lately."""
        if self.index is None or self.index.live.finished:
            return False
        try:
            if time.time() - self.index.path.stat().st_mtime < QUIET_SECONDS:
                return True
            registered = {run.run_id: run.status for run in self.app.workspace.active()}  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - no file yet, an unreadable registry: keep following
            return True
        return registered.get(self.index.root_id or "") in ("active", "cancelling", "elsewhere")

    @property
    def _final_seen(self) -> bool:
        run = self.index.runs.get(self.run_id or "") if self.index else None
        return run is not None and run.final is not None

    @property
    def live(self) -> bool:
        return self.index is not None and not self.index.live.finished

    def count(self) -> int:
        if self.index is None:
            return 0
        if self.rows is not None:
            return len(self.rows)
        run = self.index.runs.get(self.run_id or "")
        return len(run) if run else 0

    def entry(self, row: int) -> Entry:
        """The step shown on ``row``."""
        return self.rows[row] if self.rows is not None else (self.run_id or "", row, 0)

    def step_index(self, row: int) -> int:
        return self.entry(row)[1]

    def _rebuild(self) -> None:
        """The step tree: the run's steps, each followed by the steps of the child runs it started (nested), and
        only the error steps under ``E``. A run without child runs needs no list at all (row i is step i), so a
        10,000-step run costs nothing here."""
        run = self.index.runs.get(self.run_id or "") if self.index else None
        if run is None or (not self.errors_only and not any(run.children.values()) and not run.pending_children):
            self.rows = None
            return
        rows: list[Entry] = []
        self._walk(run.run_id, 0, rows, set())
        if self.errors_only:
            rows = [e for e in rows if self.index.step_error(e[0], e[1])]  # type: ignore[union-attr]
        self.rows = rows

    def _walk(self, run_id: str, depth: int, rows: list[Entry], seen: set[str]) -> None:
        run = self.index.runs.get(run_id) if self.index else None
        if run is None or run_id in seen:
            return
        seen.add(run_id)
        for i in range(len(run)):
            rows.append((run_id, i, depth))
            for child in run.children.get(i, []):
                self._walk(child, depth + 1, rows, seen)
        for child in run.pending_children:  # started by the step in progress
            self._walk(child, depth + 1, rows, seen)

    def _row(self, row: int) -> str:
        assert self.index is not None
        run_id, i, depth = self.entry(row)
        data = self.index.step(run_id, i)
        tried = len(self.index.runs[run_id].branches.get(i, ()))
        text = step_row(int(data.get("step") or i + 1), data, self.index.step_error(run_id, i), tried)
        return text if not depth else "  " * depth + "↳" + text[2 * depth + 1:]

    # ------------------------------------------------------------------ drawing

    def _update(self) -> None:
        if self.index is None:
            return
        live, run = self.index.live, self.index.runs.get(self.run_id or "")
        title = Text(f" {clean(self.run_id)} ", style="bold")
        if self.run_id != self.index.root_id:
            title.append(f"(child of {clean(run.parent_run_id if run else '?')}) ", style="dim")
        status = live.status() if live.finished or self._alive else "interrupted: no final event"
        title.append(f"[{status}] ", style="green" if live.finished else "yellow" if self._alive else "red")
        task = (run.start.get("task") if run else None) or live.task
        title.append(one_line(task, 200))
        self.query_one("#run-title", Static).update(title)
        meters = [meter_text(*m) for m in live.meters(self.live and self._alive)]
        reward = Text(f"Σ reward {self._cumulative():.2f}  {clean(live.model)}")
        self.query_one("#meters", Static).update(Text("  ").join([meters[0], meters[1]]) + Text("\n")
                                                 + Text("  ").join([meters[2], meters[3]]) + Text("  ") + reward)
        now = self.index.live.in_progress
        if self.live and self._alive:
            calls = list(now.values())
            text = "▶ " + (" · ".join(calls) if calls else f"step {live.current_step or live.steps + 1}…")
        elif live.final is not None:
            text = f"■ {live.final.get('termination_reason')}: " + one_line(live.final.get("final_response")
                                                                          or live.final.get("error"), 200)
        else:
            text = "■ no final event: the run was interrupted (or its process is still starting)"
        self.query_one("#in-progress", Static).update(Text(clean(text)))
        steps = self.query_one("#steps", VirtualList)
        if steps.count:
            self.show_step(steps.cursor)

    def _cumulative(self) -> float:
        run = self.index.runs.get(self.run_id or "") if self.index else None
        if run is None or not len(run):
            return 0.0
        value = self.index.step(run.run_id, len(run) - 1).get("cumulative_reward")  # type: ignore[union-attr]
        return float(value) if isinstance(value, (int, float)) else 0.0

    def show_step(self, row: int) -> None:
        """Put step ``row`` of the list into the detail pane."""
        if self.index is None or self.run_id is None or not self.count():
            return
        run_id, i, depth = self.entry(min(row, self.count() - 1))
        if self._shown_detail == (run_id, i):
            return
        self._shown_detail = (run_id, i)
        run = self.index.runs[run_id]
        data = self.index.step(run_id, i)
        children = [(child, self._child_summary(child)) for child in run.children.get(i, [])]
        detail = step_detail(int(data.get("step") or i + 1), data, self.index.step_error(run_id, i),
                             run.sub_calls.get(i, []), children, self.index.branches(run_id, i))
        if depth:
            detail = Text(f"in child run {clean(run_id)} (o opens it alone)\n", style="dim") + detail
        self.query_one("#detail", Static).update(detail)

    def _child_summary(self, run_id: str) -> str:
        child = self.index.runs.get(run_id) if self.index else None
        if child is None:
            return "(no events yet)"
        final = child.final or {}
        reason = final.get("termination_reason") or "running"
        what = one_line(final.get("final_response") or child.start.get("task"), 60)
        return f"{len(child)} steps · {reason} · {what}"

    def on_virtual_list_highlighted(self, message: VirtualList.Highlighted) -> None:
        self.show_step(message.index)

    def on_virtual_list_selected(self, message: VirtualList.Selected) -> None:
        self.query_one("#detail-box").focus()

    # ------------------------------------------------------------------ replay navigation

    @property
    def steps(self) -> VirtualList:
        return self.query_one("#steps", VirtualList)

    def action_step(self, delta: int) -> None:
        self.steps.follow = False
        self.steps.action_cursor(delta)

    def _show_rows(self, cursor: int) -> None:
        self.steps.follow = False
        self._shown_detail = None
        self.steps.set_count(self.count())
        self.steps.cursor = max(0, min(cursor, self.count() - 1))

    def goto(self, number: int) -> bool:
        """Move to step ``number`` (1-based) of the run shown; False when it has none."""
        if self.index is None or not 1 <= number <= len(self.index.runs[self.run_id or ""]):
            return False
        self.errors_only = False
        self._rebuild()
        target = (self.run_id or "", number - 1, 0)
        self._show_rows(self.rows.index(target) if self.rows is not None else number - 1)
        return True

    def action_jump(self) -> None:
        self.app.prefill("/goto ")  # type: ignore[attr-defined]

    def action_next_error(self) -> None:
        if self.index is None or not self.count():
            return
        following = next((row for row in range(self.steps.cursor + 1, self.count())
                          if self.index.step_error(*self.entry(row)[:2])), None)
        if following is None:
            self.app.say("no error step after this one")  # type: ignore[attr-defined]
            return
        self.steps.follow = False
        self.steps.cursor = following

    def action_errors_only(self) -> None:
        if self.index is None or self.run_id is None:
            return
        current = self.entry(self.steps.cursor) if self.count() else None
        self.errors_only = not self.errors_only
        self._rebuild()
        if self.errors_only and not self.rows:
            self.errors_only = False
            self._rebuild()
            self.app.say("this run has no error step")  # type: ignore[attr-defined]
            return
        order = self.rows if self.rows is not None else None
        cursor = 0
        if current is not None:
            if order is None:
                cursor = current[1] if current[0] == self.run_id else 0
            else:
                cursor = next((n for n, e in enumerate(order) if e == current), None) or next(
                    (n for n, e in enumerate(order) if e[0] == current[0] and e[1] >= current[1]), 0)
        self._show_rows(cursor)

    def action_follow(self) -> None:
        self.errors_only = False
        self._rebuild()
        self.steps.follow = True
        self.steps.set_count(self.count())
        self.steps.action_jump(-1)

    def action_open_child(self) -> None:
        if self.index is None or self.run_id is None or not self.count():
            return
        run_id, i, depth = self.entry(self.steps.cursor)
        children = self.index.runs[run_id].children.get(i, []) or ([run_id] if depth else [])
        if not children:
            self.app.say("this step started no child run")  # type: ignore[attr-defined]
            return
        self.open(self.index.path, children[0])

    def action_parent(self) -> None:
        run = self.index.runs.get(self.run_id or "") if self.index else None
        if run is not None and run.parent_run_id and self.index is not None:
            self.open(self.index.path, run.parent_run_id)
