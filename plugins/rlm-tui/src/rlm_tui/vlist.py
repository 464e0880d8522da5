"""A virtual list: renders only the rows on screen and asks for each row's text when it is drawn.

A 10,000-step run has 10,000 rows; building a widget (or even a DataTable row) for each would take seconds and
grow with the run. ``VirtualList`` keeps just a count and a ``row(index) -> str`` callback (Textual's line API:
``render_line`` draws one screen line), so opening a run and appending to it cost the same at any length.
Keyboard: up/down, page up/down, home/end, enter (``Selected``); moving the cursor posts ``Highlighted``.
"""

from __future__ import annotations

from typing import Callable

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from rlm_tui.render import clean


class VirtualList(ScrollView, can_focus=True):
    """Rows drawn on demand from ``row(index)``; ``count`` says how many there are (call ``set_count``)."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Open", show=False),
    ]
    DEFAULT_CSS = """
    VirtualList { height: 1fr; overflow-x: hidden; }
    VirtualList > .virtual-list--cursor { background: $accent 40%; text-style: bold; }
    VirtualList:focus > .virtual-list--cursor { background: $accent; color: $text; }
    """
    COMPONENT_CLASSES = {"virtual-list--cursor"}

    cursor: reactive[int] = reactive(0, always_update=True)

    class Highlighted(Message):
        def __init__(self, vlist: "VirtualList", index: int) -> None:
            super().__init__()
            self.vlist, self.index = vlist, index

    class Selected(Message):
        def __init__(self, vlist: "VirtualList", index: int) -> None:
            super().__init__()
            self.vlist, self.index = vlist, index

    def __init__(self, row: Callable[[int], str], *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._row = row
        self.count = 0
        self.follow = False  # keep the cursor on the last row as rows arrive

    def set_row(self, row: Callable[[int], str]) -> None:
        self._row = row
        self.refresh()

    def set_count(self, count: int) -> None:
        """The number of rows changed (rows appended): resize, and follow the end when ``follow`` is on."""
        was_at_end = self.cursor >= self.count - 1
        self.count = count
        self.virtual_size = Size(0, count)  # rows are cut to the width: nothing to scroll sideways
        if self.follow and (was_at_end or self.count <= 1) and count:
            self.cursor = count - 1
        elif self.cursor >= count:
            self.cursor = max(0, count - 1)
        self.refresh()

    def watch_cursor(self, value: int) -> None:
        if not self.count:
            return
        self.scroll_to_row(value)
        self.post_message(self.Highlighted(self, value))
        self.refresh()

    def scroll_to_row(self, index: int) -> None:
        top, height = int(self.scroll_offset.y), max(1, self.scrollable_content_region.height)
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + height:
            self.scroll_to(y=index - height + 1, animate=False, immediate=True)

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        if index >= self.count:
            return Strip.blank(width, self.rich_style)
        try:
            text = self._row(index)
        except Exception as exc:  # noqa: BLE001 - one bad row must not break the list
            text = f"(unreadable row: {exc})"
        text = clean(text.replace("\n", " ")[:width]).ljust(width)  # the last gate before the terminal
        style = self.get_component_rich_style("virtual-list--cursor") if index == self.cursor else self.rich_style
        return Strip([Segment(text, style if isinstance(style, Style) else None)], width)

    def on_resize(self) -> None:
        self.virtual_size = Size(0, self.count)

    def action_cursor(self, delta: int) -> None:
        if self.count:
            self.cursor = min(self.count - 1, max(0, self.cursor + delta))

    def action_page(self, direction: int) -> None:
        self.action_cursor(direction * max(1, self.scrollable_content_region.height - 1))

    def action_jump(self, index: int) -> None:
        if self.count:
            self.cursor = self.count - 1 if index < 0 else min(index, self.count - 1)

    def action_select(self) -> None:
        if self.count:
            self.post_message(self.Selected(self, self.cursor))

    def on_click(self, event) -> None:  # mouse is optional: a click picks the row under it
        index = int(self.scroll_offset.y) + event.y
        if 0 <= index < self.count:
            self.cursor = index
            self.post_message(self.Selected(self, index))
