"""``Turn``: what one ``completion`` hands the root run of the ``rlms`` loop, and what the loop hands back.

It is the run's ``carry`` (``rlm_host.sdk.embedding.VariableCarrier``): for a persistent ``RLM`` it binds the
variables earlier completions left (JSON data) and reads the new ones back when the run ends. It also carries
what only the root run has: the question as the caller gave it (None: no question, as rlms' ``root_prompt``), the
earlier contexts and conversations (``context_0`` …, ``history_0`` …) and ``environment_kwargs['setup_code']``;
the loop fills in the messages of each turn, the conversation, the last non-empty reply (the partial answer an
exception carries) and why ``max_errors`` stopped the run. Child runs get none of this (rlms' children start
afresh too)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from rlm_host.sdk.embedding import VariableCarrier


@dataclass(frozen=True)
class ErrorStreak:
    """Iterations in a row whose code failed, the limit they reached, and the last error."""

    count: int
    threshold: int
    last_error: str


class Turn(VariableCarrier):
    """One completion's state for its root run (see the module docstring)."""

    def __init__(self, *, question: Optional[str], contexts: tuple[Any, ...] = (), histories: tuple[Any, ...] = (),
                 variables: Optional[dict[str, Any]] = None, keep_variables: bool = False,
                 not_carried: tuple[str, ...] = (), setup_code: Optional[str] = None) -> None:
        super().__init__(variables if keep_variables else None)
        self.not_carried = list(not_carried)  # what earlier completions left that is not data (the model is told)
        self.question = question
        self.contexts = list(contexts)
        self.histories = list(histories)
        self.keep_variables = keep_variables
        self.setup_code = setup_code
        self.prompts: dict[int, list[dict[str, str]]] = {}  # step → the messages the root model was sent
        self.conversation: list[dict[str, str]] = []
        self.partial_answer: Optional[str] = None
        self.final_answer: Optional[str] = None
        self.error_streak: Optional[ErrorStreak] = None

    def save_from(self, session: Any) -> None:
        """Read the variables back only for a persistent ``RLM`` (otherwise nothing outlives the run)."""
        if self.keep_variables:
            super().save_from(session)


__all__ = ["Turn", "ErrorStreak"]
