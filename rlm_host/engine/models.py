"""A model connector bound to a role (root or sub): counts usage and cost, enforces the budget, reports calls
and their retries."""

from __future__ import annotations

import inspect
import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from rlm_host.engine.budget import Budget
from rlm_host.llm.protocol import Completion, Message, ModelConnector
from rlm_host.types import Usage

if TYPE_CHECKING:
    from rlm_host.engine.scope import RunScope
    from rlm_host.llm.prices import PriceTable


class ModelClient:
    """Calls a connector for one role of a run tree.

    Usage is added to ``usage`` (shared by every run of the tree for that role) and charged to the budget;
    the request timeout never exceeds the time left in the run. A completion without a cost gets one from
    ``prices`` (the built-in table when None) when the model's price is known. With a ``scope``, each retry the
    connector reports (connectors whose ``complete`` takes ``on_retry``) is emitted as a ``model_retry`` event.
    """

    def __init__(self, connector: ModelConnector, role: str, usage: Usage, budget: Budget,
                 lock: Optional[threading.Lock] = None, *, scope: Optional["RunScope"] = None,
                 prices: Optional["PriceTable"] = None) -> None:  # fmt: skip
        self.connector = connector
        self.role = role
        self.usage = usage
        self.budget = budget
        self.scope = scope
        self.prices = prices
        self._lock = lock or threading.Lock()  # shared with whoever else writes to ``usage``
        self._reports_retries = scope is not None and _takes_on_retry(connector)
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
        extra: dict[str, Any] = {"on_retry": self._on_retry} if self._reports_retries else {}
        try:
            completion = self.connector.complete(messages, timeout=max(1.0, self.budget.remaining()), **extra)
        finally:
            with self._lock:
                self.seconds += time.monotonic() - started
        if completion.cost is None:
            cost = self._price(completion)
            if cost is not None:
                completion = completion.model_copy(update={"cost": cost})
        with self._lock:
            self.usage.add(completion.prompt_tokens, completion.completion_tokens, completion.cost)
        self.budget.charge(completion.prompt_tokens + completion.completion_tokens, completion.cost)
        return completion

    def _price(self, completion: Completion) -> Optional[float]:
        from rlm_host.llm.prices import default_table

        table = self.prices or default_table()
        base_url = getattr(self.connector, "base_url", None)
        return table.cost(self.name, completion.prompt_tokens, completion.completion_tokens,
                          base_url=base_url if isinstance(base_url, str) else None)  # fmt: skip

    def _on_retry(self, attempt: int, wait: float, reason: str) -> None:
        assert self.scope is not None
        self.scope.emit("model_retry", {"role": self.role, "model": self.name, "attempt": attempt,
                                        "wait": round(wait, 3), "reason": reason})  # fmt: skip


def _takes_on_retry(connector: Any) -> bool:
    """Whether ``connector.complete`` accepts an ``on_retry`` keyword (by name or through ``**kwargs``)."""
    try:
        parameters = inspect.signature(connector.complete).parameters.values()
    except (TypeError, ValueError, AttributeError):
        return False
    return any(p.name == "on_retry" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
