"""``PersistentREPL``: what a persistent ``RLM`` keeps between completions (its ``_persistent_env``, as in rlms).

Each completion adds its prompt as ``context_N`` and, when it ends, its conversation as ``history_N``; the REPL
variables whose values are JSON data (numbers, text, lists, dicts) carry over to the next completion. Each
completion still runs in a fresh sandbox session, in any rlm sandbox (Monty, Docker, process): what carries over
is data, bound again (functions, classes and modules do not carry; their names are in ``dropped``, and the model
is told which). rlms keeps its one in-process namespace alive instead, so there everything carries — and so does
whatever a bad turn left behind."""

from __future__ import annotations

import copy
from typing import Any, Optional

from rlm_compat_rlms.loop.turn import Turn


class PersistentREPL:
    """The contexts, conversations and variables of a persistent ``RLM``'s completions so far."""

    def __init__(self) -> None:
        self.contexts: list[Any] = []
        self.histories: list[list[dict[str, str]]] = []
        self.variables: dict[str, Any] = {}
        self.dropped: list[str] = []

    def add_context(self, payload: Any) -> int:
        """Keep ``payload`` as the next ``context_N``; returns N."""
        self.contexts.append(payload)
        return len(self.contexts) - 1

    def add_history(self, messages: list[dict[str, str]]) -> int:
        """Keep a completion's conversation as the next ``history_N``; returns N."""
        self.histories.append(copy.deepcopy(messages))
        return len(self.histories) - 1

    def get_context_count(self) -> int:
        return len(self.contexts)

    def get_history_count(self) -> int:
        return len(self.histories)

    def turn(self, question: Optional[str], setup_code: Optional[str]) -> Turn:
        """The next completion's ``Turn``: every context and conversation so far, the variables to bind again."""
        return Turn(question=question, contexts=tuple(self.contexts), histories=tuple(self.histories),
                    variables=self.variables, keep_variables=True, not_carried=tuple(self.dropped),
                    setup_code=setup_code)

    def keep(self, turn: Turn) -> None:
        """What a completion's run left: its variables (when its sandbox session got them back) and conversation."""
        if turn.saved is not None:
            self.variables, self.dropped = dict(turn.saved), list(turn.dropped)
        if turn.conversation:
            self.add_history(turn.conversation)

    @property
    def locals(self) -> dict[str, Any]:
        """The REPL's names as the next completion starts with them: the carried variables, ``context_N`` and
        ``context`` (= ``context_0``), ``history_N`` and ``history`` (= ``history_0``)."""
        names: dict[str, Any] = dict(self.variables)
        for index, value in enumerate(self.contexts):
            names[f"context_{index}"] = value
        if self.contexts:
            names["context"] = self.contexts[0]
        for index, value in enumerate(self.histories):
            names[f"history_{index}"] = value
        if self.histories:
            names["history"] = self.histories[0]
        return names

    def cleanup(self) -> None:
        """Forget everything (``RLM.close()``)."""
        self.contexts, self.histories, self.variables, self.dropped = [], [], {}, []


__all__ = ["PersistentREPL"]
