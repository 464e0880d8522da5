"""REPL variables carried from one run to the next (the turns of a chat session).

What survives a turn is defined here, the same in every sandbox runtime and across processes: the user variables
whose values are JSON data (str, numbers, bools, None, lists, dicts), up to :data:`VALUE_BYTES` each and
:data:`TOTAL_BYTES` together. Functions, classes, modules, open files and other objects do not survive; their
names are kept in ``dropped`` so the next turn's model is told to rebuild them. ``context`` is not carried: each
turn gets the session's context afresh.
"""

from __future__ import annotations

import json
from typing import Any, Optional

VALUE_BYTES = 1_000_000
TOTAL_BYTES = 8_000_000
NOT_CARRIED = {"context"}
#: Type names (as ``list_variables`` gives them) of the values that survive a turn.
JSON_TYPES = {"str", "int", "float", "bool", "NoneType", "list", "dict", "tuple"}


class VariableCarrier:
    """Wraps the root run's sandbox session. Once the environment has set the session up (the runner calls
    :meth:`after_setup`; a framework's first code execution does too) it notes the names that exist then — the
    environment's own helpers, never carried — and binds ``variables``; before ``shutdown`` it reads the other
    variables back into ``saved`` (and the names it could not keep into ``dropped``)."""

    def __init__(self, variables: Optional[dict[str, Any]] = None) -> None:
        self.variables = dict(variables or {})
        self.saved: Optional[dict[str, Any]] = None  # None until a session of the run shut down
        self.dropped: list[str] = []
        self._session: Any = None
        self._baseline: Optional[set[str]] = None

    def wrap(self, session: Any) -> Any:
        self._session = _CarryingSession(session, self)
        return self._session

    def after_setup(self) -> None:
        """Note the environment's names and bind the carried variables (once)."""
        if self._session is None or self._baseline is not None:
            return
        inner = self._session._session
        self._baseline = set(inner.list_variables())
        for name, value in self.variables.items():
            inner.set_variable(name, value)

    def save_from(self, session: Any) -> None:
        if self._baseline is None:
            return  # the session never got past its setup: the earlier variables stay as they were
        saved: dict[str, Any] = {}
        dropped: list[str] = []
        total = 0
        try:
            names = session.list_variables()
        except Exception:  # a crashed sandbox: nothing new is known, the previous state stays
            return
        for name, type_name in sorted(names.items()):
            if name in NOT_CARRIED or name.startswith("_") or (name in self._baseline and name not in self.variables):
                continue
            if type_name not in JSON_TYPES:  # a runtime may hand back a repr for these: never carried as data
                dropped.append(f"{name} ({type_name})")
                continue
            try:
                value = session.get_variable(name)
                size = len(json.dumps(value, allow_nan=False))
            except Exception:
                dropped.append(f"{name} ({type_name})")
                continue
            if size > VALUE_BYTES or total + size > TOTAL_BYTES:
                dropped.append(f"{name} ({type_name}, too large to keep)")
                continue
            saved[name] = value
            total += size
        self.saved, self.dropped = saved, dropped


class _CarryingSession:
    """A sandbox session that restores and saves the carried variables around its life; all else delegated."""

    def __init__(self, session: Any, carrier: VariableCarrier) -> None:
        self._session, self._carrier, self._executed = session, carrier, False

    def execute(self, code: str, **kwargs: Any) -> Any:
        if self._executed:  # a session's first execution defines the REPL helpers; from the second on, code is
            # the model's (what a framework run relies on; the native loop calls after_setup itself)
            self._carrier.after_setup()
        self._executed = True
        return self._session.execute(code, **kwargs)

    def shutdown(self) -> None:
        self._carrier.save_from(self._session)
        self._session.shutdown()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)
