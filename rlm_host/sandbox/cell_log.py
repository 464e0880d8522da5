"""Rebuilding a lost REPL by replaying its cells: the record of a session's successful cells and of what its host
functions returned to them.

An environment whose cells have no effect outside the REPL (pure_rlm: the sandbox has no files or network to
change) asks its session to keep this log (``SessionBase.keep_cells_for_rebuild``). When the worker is lost —
killed between steps, crashed or timed out during one, a Docker container removed — the session starts a new one
and runs the logged cells again, in order, so the model's variables come back. Host functions called during
that replay (``llm_query``…) are answered from the record, in the order they were first called, never asked
again: the rebuild costs no model call and gives the same values.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Optional

HostFunction = Callable[..., Any]


class ReplayMismatch(RuntimeError):
    """A replayed cell called host functions in another order than it first did (it is not deterministic)."""


class CellLog:
    """The successful cells of a session and the host-function results each one got."""

    def __init__(self) -> None:
        self.cells: list[tuple[str, list[tuple[str, bool, Any]]]] = []
        self._calls: list[tuple[str, bool, Any]] = []  # the cell running now: (function, raised, value)
        self._replaying: Optional[deque[tuple[str, bool, Any]]] = None

    def wrap(self, name: str, function: HostFunction) -> HostFunction:
        """``function`` recording what it returns (or raises); answering from the record during a replay."""

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._replaying is not None:
                if not self._replaying or self._replaying[0][0] != name:
                    raise ReplayMismatch(f"{name}() was not called at this point when the cell first ran")
                _, raised, value = self._replaying.popleft()
                if raised:
                    raise RuntimeError(value)
                return value
            try:
                value = function(*args, **kwargs)
            except Exception as exc:
                self._calls.append((name, True, str(exc)))
                raise
            self._calls.append((name, False, value))
            return value

        call.__name__ = call.__qualname__ = getattr(function, "__name__", name)
        return call

    def begin(self) -> None:
        """A new cell starts: forget the calls of the last one."""
        self._calls = []

    def keep(self, code: str) -> None:
        """The cell that just ran succeeded: log it with its calls."""
        self.cells.append((code, self._calls))
        self._calls = []

    def replay(self, run: Callable[[str], Any], succeeded: Callable[[Any], bool]) -> tuple[int, Optional[str]]:
        """Run every logged cell again with ``run(code)``; the number rebuilt and, if one failed, why. Cells after
        a failing one are dropped from the log (they may depend on it)."""
        for index, (code, calls) in enumerate(list(self.cells)):
            self._replaying = deque(calls)
            try:
                result = run(code)
                why = None if succeeded(result) else _first_line(getattr(result, "error", None) or "it failed")
            except ReplayMismatch as exc:
                why = str(exc)
            finally:
                self._replaying = None
            if why is not None:
                self.cells = self.cells[:index]
                return index, why
        return len(self.cells), None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    named = [line for line in lines if line.split(":", 1)[0].replace(".", "").isidentifier() and ": " in line]
    return (named or lines or [str(text)])[0]
