"""Limits shared by a run and all its child runs: wall clock, tokens, cost, sub-model calls, cancellation."""

from __future__ import annotations

import threading
import time
from concurrent.futures import wait
from typing import Callable, Optional, TypeVar

from rlm_host.errors import BudgetExceeded
from rlm_host.threads import submit

T = TypeVar("T")
POLL_SECONDS = 0.1  # how soon a cancellation abandons a model call in progress


class Budget:
    """One budget for a whole run tree; thread-safe because batched sub-calls run concurrently.

    A call whose cost is unknown (a model nobody prices) is not counted as free: it is counted in
    ``unpriced_calls``. The run goes on — a cost limit stops on what it can measure, and the run start already
    said the model cannot be priced (or refused it, with ``strict``) — and its result says the cost is
    incomplete.
    """

    def __init__(self, *, timeout: float, max_llm_calls: int, max_tokens: Optional[int] = None,
                 max_cost: Optional[float] = None, cancel: Optional[threading.Event] = None,
                 shared: Optional["Budget"] = None) -> None:
        self.shared = shared  # a budget several run trees draw from too (``RLM(shared_budget=True)``)
        self.deadline, self.timeout, self.cancel = time.monotonic() + timeout, timeout, cancel or threading.Event()
        self.max_llm_calls, self.max_tokens, self.max_cost = max_llm_calls, max_tokens, max_cost
        self.llm_calls, self.tokens, self.cost = 0, 0, 0.0  # spent
        self.llm_calls_refused = False  # set once a sub-call was refused: the runner then ends the run
        self.unpriced_calls = 0  # calls charged with an unknown cost: ``cost`` covers only the others
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """What was spent against each limit: ``Budget(tokens=1,290/100,000, cost=$0.0021/$0.5, llm_calls=3/50)``."""

        def against(spent: str, limit: Optional[str]) -> str:
            return f"{spent}/{limit}" if limit is not None else spent

        cost = f"${self.cost:.4f}" + (f" + {self.unpriced_calls} unpriced" if self.unpriced_calls else "")
        most = f"{self.max_tokens:,}" if self.max_tokens is not None else None
        parts = [f"tokens={against(f'{self.tokens:,}', most)}",
                 f"cost={against(cost, f'${self.max_cost:g}' if self.max_cost is not None else None)}",
                 f"llm_calls={against(str(self.llm_calls), str(self.max_llm_calls))}",
                 f"remaining={max(self.remaining(), 0):.1f}s" if self.timeout != float("inf") else "",
                 "cancelled" if self.cancel.is_set() else ""]
        return f"Budget({', '.join(part for part in parts if part)})"

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def stop_reason(self) -> Optional[BudgetExceeded]:
        """Why the run must stop now, or None."""
        if self.cancel.is_set():
            return BudgetExceeded("cancelled", "the run was cancelled")
        if self.remaining() <= 0:
            return BudgetExceeded("timeout", f"wall-clock limit of {self.timeout:g} s reached")
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return BudgetExceeded("budget", f"token budget of {self.max_tokens} reached ({self.tokens} used)")
        if self.max_cost is not None and self.cost >= self.max_cost:
            unpriced = f" and {self.unpriced_calls} call(s) of unknown cost" if self.unpriced_calls else ""
            spent = f"${self.cost:.4f} spent{unpriced}"
            return BudgetExceeded("budget", f"cost budget of ${self.max_cost:g} reached ({spent})")
        if self.shared is not None:
            stop = self.shared.stop_reason()
            if stop is not None:
                return BudgetExceeded(stop.reason, f"shared budget: {stop}")
        return None

    def check(self) -> None:
        stop = self.stop_reason()
        if stop is not None:
            raise stop

    def unless_cancelled(self, call: Callable[[], T]) -> T:
        """``call()``, abandoned when the run is cancelled while it waits (``rlm runs cancel`` from another
        process, a cancelled task): it runs on a daemon helper thread (``rlm_host.threads``), and this raises
        ``BudgetExceeded("cancelled")`` within ``POLL_SECONDS`` of the cancellation. The abandoned call finishes
        (or times out) on its own."""
        future = submit(call, "rlm-model-call")
        while not wait([future], POLL_SECONDS).done:
            if self._cancelled():
                raise BudgetExceeded("cancelled", f"{self.stop_reason()} (the model call in progress was abandoned)")
        return future.result()

    def _cancelled(self) -> bool:
        """This budget, or one it draws from, was cancelled."""
        return self.cancel.is_set() or (self.shared is not None and self.shared._cancelled())

    def take_llm_call(self) -> int:
        """Count one sub-model call; BudgetExceeded once ``max_llm_calls`` are used."""
        self.check()
        if self.shared is not None:
            try:
                self.shared.take_llm_call()
            except BudgetExceeded:
                self.llm_calls_refused = True
                raise
        with self._lock:
            if self.llm_calls >= self.max_llm_calls:
                self.llm_calls_refused = True
                raise BudgetExceeded("max_llm_calls",
                                     f"max_llm_calls ({self.max_llm_calls}) reached: no more sub-model calls")
            self.llm_calls += 1
            return self.llm_calls

    def charge(self, tokens: int, cost: Optional[float]) -> None:
        """Count one call's tokens and cost (None: unknown, counted in ``unpriced_calls``)."""
        with self._lock:
            self.tokens += tokens
            if cost is None:
                self.unpriced_calls += 1
            else:
                self.cost += cost
        if self.shared is not None:
            self.shared.charge(tokens, cost)
