"""``approve=ask`` in the TUI: an action that changes things (a file write, a command, a destructive MCP tool)
waits in a modal for y or n, as ``rlm run --approve ask`` waits on the terminal.

The run asks from its worker thread (the host calls ``RLM(approver=…)`` there); :class:`TuiApprover` hands the
request to the app's event loop and blocks that thread until the person answers. What is shown comes from the
model: plain text (never markup), control characters made visible (``terminal_safe``), each detail cut.
"""

from __future__ import annotations

import asyncio
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from rlm_host.sdk.embedding import terminal_safe

DETAIL_CHARS = 1500


class ApprovalScreen(ModalScreen[bool]):
    """One request: what the action is, its details, and y (allow) / n or Esc (refuse)."""

    BINDINGS = [Binding("y", "answer(True)", "Allow"), Binding("n", "answer(False)", "Refuse"),
                Binding("escape", "answer(False)", "Refuse")]  # fmt: skip
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%; border: thick $warning;
                                background: $surface; padding: 1 2; }
    """

    def __init__(self, request: Any) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        text = Text()
        text.append(f"{request.tool} wants to {request.kind}\n", style="bold")
        text.append(terminal_safe(str(request.summary)) + "\n")
        for key, value in request.details.items():
            shown = str(value)
            if len(shown) > DETAIL_CHARS:
                shown = shown[:DETAIL_CHARS] + f"… ({len(shown) - DETAIL_CHARS:,} more characters)"
            text.append(f"\n{key}:\n", style="bold")
            text.append(terminal_safe(shown) + "\n")
        text.append("\ny: allow · n / Esc: refuse (the model is told)", style="italic")
        with Vertical():
            yield Static(text, markup=False, id="approval-text")

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
