"""A model connector bound to a role (root or sub): counts usage, enforces the budget, reports calls."""

from __future__ import annotations

import threading
import time
from typing import Optional

from rlm_host.engine.budget import Budget
from rlm_host.llm.protocol import Completion, Message, ModelConnector
from rlm_host.types import Usage


class ModelClient:
    """Calls a connector for one role of a run tree.

    Usage is added to ``usage`` (shared by every run of the tree for that role) and charged to the budget;
    the request timeout never exceeds the time left in the run.
    """

    def __init__(self, connector: ModelConnector, role: str, usage: Usage, budget: Budget,
                 lock: Optional[threading.Lock] = None) -> None:  # fmt: skip
        self.connector = connector
        self.role = role
        self.usage = usage
        self.budget = budget
        self._lock = lock or threading.Lock()  # shared with whoever else writes to ``usage``
        self.seconds = 0.0  # wall time spent waiting for this role's model, all calls

    @property
    def name(self) -> str:
        return self.connector.name

    @property
    def context_window(self) -> Optional[int]:
        return self.connector.context_window

    def complete(self, messages: list[Message]) -> Completion:
        self.budget.check()
        started = time.monotonic()
        try:
            completion = self.connector.complete(messages, timeout=max(1.0, self.budget.remaining()))
        finally:
            with self._lock:
                self.seconds += time.monotonic() - started
        with self._lock:
            self.usage.add(completion.prompt_tokens, completion.completion_tokens, completion.cost)
        self.budget.charge(completion.prompt_tokens + completion.completion_tokens, completion.cost)
        return completion
