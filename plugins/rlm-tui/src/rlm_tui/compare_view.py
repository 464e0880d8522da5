"""Two runs side by side from their first divergent step (``/compare A B``), as ``rlm runs compare`` finds it.

The host's ``compare_runs`` (over two ``Replay``s) says at which step the runs diverge and the deltas of their
outcomes (reward, tokens, cost, time, efficiency); below, each run's steps in a list of its own, both cursors
placed on the divergent step and moving together (``n``/``p``, up/down), each with the chosen step's detail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Static

from rlm_tui.index import TrajectoryIndex
from rlm_tui.render import clean, step_detail, step_row_short
from rlm_tui.vlist import VirtualList


class Side(Vertical):
    """One run's steps and the chosen step's detail."""

    DEFAULT_CSS = """
    Side { width: 1fr; }
    Side .side-title { height: 1; background: $boost; }
    Side VirtualList { height: 1fr; }
    Side VerticalScroll { height: 2fr; border-top: solid $primary; }
    """

    def __init__(self, label: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.label = label
        self.index: Optional[TrajectoryIndex] = None

    def compose(self) -> ComposeResult:
        yield Static(classes="side-title", markup=False)
        yield VirtualList(self._row)
        with VerticalScroll():
            yield Static(classes="side-detail", markup=False)

    def _row(self, i: int) -> str:
        assert self.index is not None and self.index.root_id
        data = self.index.step(self.index.root_id, i)
        return step_row_short(i + 1, data, self.index.step_error(self.index.root_id, i))

    def load(self, path: Path, cursor: int) -> None:
        self.index = TrajectoryIndex(path)
        self.index.refresh()
        root = self.index.root
        self.query_one(".side-title", Static).update(Text(f"{self.label} {clean(self.index.root_id)}"))
        steps = self.query_one(VirtualList)
        steps.set_count(len(root) if root else 0)
        steps.cursor = min(cursor, max(0, steps.count - 1))
        self.show(steps.cursor)

    def show(self, i: int) -> None:
        detail = self.query_one(".side-detail", Static)
        root = self.index.root if self.index else None
        if root is None or i >= len(root):
            detail.update(Text(f"{self.label} has no step {i + 1}", style="dim"))
            return
        index = self.index
        assert index is not None
        data = index.step(root.run_id, i)
        detail.update(step_detail(i + 1, data, index.step_error(root.run_id, i), root.sub_calls.get(i, []), [],
                                  index.branches(root.run_id, i)))


class CompareView(Vertical):
    """The comparison's summary over the two runs' step lists."""

    BINDINGS = [Binding("n", "move(1)", "Next"), Binding("p", "move(-1)", "Prev"),
                Binding("d", "divergence", "Divergence")]
    DEFAULT_CSS = """
    CompareView #summary-box { height: 6; }
    CompareView Horizontal { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.comparison: Any = None
        self.divergence_index = 0

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="summary-box"):
            yield Static(id="summary", markup=False)
        with Horizontal():
            yield Side("A", id="side-a")
            yield Side("B", id="side-b")

    def load(self, path_a: Path, path_b: Path, comparison: Any, text: str) -> None:
        """Show runs A and B with ``comparison`` (``compare_runs``) and its text (``render_comparison``)."""
        self.comparison = comparison
        divergence = comparison.divergence
        self.divergence_index = (divergence.step - 1) if divergence is not None else 0
        self.query_one("#summary", Static).update(Text(clean(text)))
        self.query_one("#side-a", Side).load(path_a, self.divergence_index)
        self.query_one("#side-b", Side).load(path_b, self.divergence_index)
        self.query_one("#side-a VirtualList").focus()

    def on_virtual_list_highlighted(self, message: VirtualList.Highlighted) -> None:
        side = message.vlist.parent
        if isinstance(side, Side):
            side.show(message.index)
        if not message.vlist.has_focus:  # the other list follows the one the user moves, not the reverse
            return
        for other in self.query(Side):
            if other is not side:
                steps = other.query_one(VirtualList)
                if steps.count and steps.cursor != min(message.index, steps.count - 1):
                    steps.cursor = min(message.index, steps.count - 1)
                other.show(message.index)

    def action_move(self, delta: int) -> None:
        self.query_one("#side-a VirtualList", VirtualList).action_cursor(delta)

    def action_divergence(self) -> None:
        self.query_one("#side-a VirtualList", VirtualList).cursor = self.divergence_index
