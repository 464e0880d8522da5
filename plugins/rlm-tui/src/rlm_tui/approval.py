"""``approve=ask`` in the TUI: an action that changes things (a file write, a command, a destructive MCP tool)
waits in a modal for y or n, as ``rlm run --approve ask`` waits on the terminal.

The run asks from its worker thread (the host calls ``RLM(approver=…)`` there); :class:`TuiApprover` hands the
request to the app's event loop and blocks that thread until the person answers. What is shown comes from the
model, so the modal shows all of it — plain text (never markup), control characters made visible
(``terminal_safe``), its line count — in a scrolled pane, and ``y`` allows it only once the pane has been at its
end: a command below sixty blank lines cannot be allowed unseen.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from rlm_host.sdk.commands import terminal_safe

ALLOW_HINT = "y: allow · n / Esc: refuse (the model is told)"
#: Characters the modal shows at most (more would stall the screen for seconds): a longer request cannot be read
#: whole here, so here it can only be refused.
MAX_SHOWN = 100_000


def request_text(request: Any) -> Text:
    """The whole request as plain text: who asks for what, the summary, every detail uncut."""
    text = Text()
    text.append(terminal_safe(f"{request.tool} wants to {request.kind}") + "\n", style="bold")
    text.append(terminal_safe(str(request.summary)) + "\n")
    for key, value in request.details.items():
        text.append(f"\n{terminal_safe(str(key))}:\n", style="bold")
        text.append(terminal_safe(str(value)) + "\n")
    return text


class ApprovalScreen(ModalScreen[bool]):
    """One request, scrolled with ↑/↓, PgUp/PgDn, Home/End; y (allow, once its end was shown), n or Esc (refuse)."""

    BINDINGS = [Binding("y", "allow", "Allow"), Binding("n", "answer(False)", "Refuse"),
                Binding("escape", "answer(False)", "Refuse")]
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical { width: 90%; max-width: 100; height: 90%; border: thick $warning;
                                background: $surface; padding: 0 1; }
    ApprovalScreen #approval-count { height: 1; color: $warning; }
    ApprovalScreen #approval-scroll { height: 1fr; }
    ApprovalScreen #approval-hint { height: 1; }
    """

    def __init__(self, request: Any) -> None:
        super().__init__()
        self.request = request
        text = request_text(request)
        self.lines = text.plain.rstrip("\n").count("\n") + 1
        self.whole = len(text) <= MAX_SHOWN
        if not self.whole:
            left = len(text) - MAX_SHOWN
            text = text[:MAX_SHOWN]
            text.append(f"\n… {left:,} more characters: too long to read here\n", style="bold red")
        self.text = text
        self.seen_all = False  # the pane has shown its last line

    def compose(self) -> ComposeResult:
        with Vertical():
            shown = "all shown below" if self.whole else f"the first {MAX_SHOWN:,} characters shown below"
            yield Static(f"approval needed · the request is {self.lines:,} lines, {shown}", markup=False,
                         id="approval-count")
            with VerticalScroll(id="approval-scroll"):
                yield Static(self.text, markup=False, id="approval-text")
            yield Static(markup=False, id="approval-hint")

    def on_mount(self) -> None:
        scroll = self.query_one("#approval-scroll", VerticalScroll)
        scroll.focus()
        self.watch(scroll, "scroll_y", lambda _: self.check_seen(), init=False)
        self.call_after_refresh(self.check_seen)

    def on_resize(self) -> None:
        self.call_after_refresh(self.check_seen)

    def check_seen(self) -> None:
        """Note when the pane's last row is (or has been) on screen, and say what the keys do now. Until the text
        is laid out (no rows yet) nothing counts as seen."""
        scroll = self.query_one("#approval-scroll", VerticalScroll)
        rows = self.query_one("#approval-text", Static).outer_size.height
        bottom = int(scroll.scroll_y) + scroll.scrollable_content_region.height
        if rows and bottom >= rows:
            self.seen_all = True
        hint = self.query_one("#approval-hint", Static)
        if not self.whole:
            hint.update(Text("too long to read whole here, so it cannot be allowed here · n / Esc: refuse",
                             style="italic"))
        elif self.seen_all:
            hint.update(Text(ALLOW_HINT, style="italic"))
        else:
            hint.update(Text(f"scroll to the end (↓ PgDn End) to allow: {min(bottom, rows):,} of {rows:,} rows seen · "
                             "n / Esc: refuse", style="italic"))

    def action_allow(self) -> None:
        self.check_seen()
        if not (self.whole and self.seen_all):
            self.app.bell()
            return
        self.dismiss(True)

    def action_answer(self, allowed: bool) -> None:
        self.dismiss(allowed)


class TuiApprover:
    """An approver (``RLM(approver=…)``) answered in the app; called from a run's worker thread."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __call__(self, request: Any) -> bool:
        async def ask() -> bool:
            answered: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            self.app.push_screen(ApprovalScreen(request), callback=lambda allowed: answered.set_result(bool(allowed)))
            return await answered

        return bool(self.app.call_from_thread(ask))
