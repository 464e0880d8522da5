"""The command line: an ``Input`` with the slash commands' completion (a Textual ``Suggester``; right arrow or
tab accepts it) and a history (up/down), kept for the session."""

from __future__ import annotations

from typing import Callable, Optional

from textual.binding import Binding
from textual.suggester import Suggester
from textual.widgets import Input

from rlm_tui.slash import complete


class SlashSuggester(Suggester):
    """Completes command words, run options, run ids and preset names (from callbacks, read when asked)."""

    def __init__(self, run_ids: Callable[[], list[str]], presets: Callable[[], list[str]]) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.run_ids, self.presets = run_ids, presets

    async def get_suggestion(self, value: str) -> Optional[str]:
        return complete(value, self.run_ids(), self.presets())


class CommandLine(Input):
    BINDINGS = [Binding("up", "history(-1)", "Previous", show=False),
                Binding("down", "history(1)", "Next", show=False),
                Binding("tab", "accept_suggestion", "Complete", show=False)]

    def __init__(self, suggester: Suggester, **kwargs) -> None:
        super().__init__(placeholder="/help · /rlm run \"task\" steps=3 · /rlm replay latest · esc: back",
                         suggester=suggester, select_on_focus=False, **kwargs)
        self.history: list[str] = []
        self._position = 0

    def remember(self, line: str) -> None:
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
        self._position = len(self.history)

    def action_history(self, delta: int) -> None:
        if not self.history:
            return
        self._position = min(len(self.history), max(0, self._position + delta))
        self.value = self.history[self._position] if self._position < len(self.history) else ""
        self.cursor_position = len(self.value)

    def action_accept_suggestion(self) -> None:
        if self._suggestion:
            self.value = self._suggestion
            self.cursor_position = len(self.value)
        else:
            self.app.action_focus_next()
