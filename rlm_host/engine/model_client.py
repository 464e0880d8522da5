"""A model connector bound to a role (root or sub): counts usage and cost, enforces the budget, reports calls
and their retries."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Optional

from rlm_host.engine.budget import Budget
from rlm_host.event_types import error_line, next_call
from rlm_host.models.protocol import (Completion, Message, ModelConnector, Purpose, ReplyFormat, ReplyFormatMode,
                                   provider_of, reply_format_for)
from rlm_host.models.prices import default_table, endpoint
from rlm_host.results import Usage
from rlm_host.text import valid_unicode
from rlm_host.tokens import count_tokens

if TYPE_CHECKING:
    from rlm_host.engine.scope import RunScope
    from rlm_host.models.prices import PriceTable


class ModelTime:
    """Wall time spent waiting for models, added up by every client given it: a run's clients share one, so a step's
    ``model_seconds`` counts each model call, one to a model code named (``llm_query(..., model=...)``) included."""

    def __init__(self) -> None:
        self.seconds = 0.0


class ModelClient:
    """Calls a connector for one role of a run tree.

    Usage is added to ``usage`` (shared by every run of the tree for that role) and charged to the budget;
    the request timeout never exceeds the time left in the run. A completion without a cost gets one from
    ``prices`` (the built-in table when None) when the model's price is known. With a ``scope``, each retry the
    connector reports through ``on_retry`` is emitted as a ``model_retry`` event, and every call is bracketed by
    ``model_call_start`` / ``model_call_end`` events. A turn's reply format reaches
    the connector as ``reply_format_mode`` (``[run] reply_format``) and the connector's declarations allow.
    The time spent waiting for the model is added to ``waited`` (its own when None; shared: under one ``lock``).
    """

    def __init__(self, connector: ModelConnector, role: str, usage: Usage, budget: Budget,
                 lock: Optional[threading.Lock] = None, *, scope: Optional["RunScope"] = None,
                 prices: Optional["PriceTable"] = None,
                 reply_format_mode: ReplyFormatMode = "auto", waited: Optional[ModelTime] = None) -> None:
        self.connector, self.role, self.usage, self.budget = connector, role, usage, budget
        self.scope, self.prices, self.reply_format_mode = scope, prices, reply_format_mode
        self._emit = scope.emit if scope is not None else lambda *args, **kwargs: None  # no scope: no events
        self._lock = lock or threading.Lock()  # shared with whoever else writes to ``usage``
        self.waited = waited or ModelTime()

    @property
    def name(self) -> str:
        return self.connector.name

    @property
    def provider(self) -> str:
        """The provider as OpenTelemetry names it (``gen_ai.provider.name``), for events."""
        return provider_of(self.connector)

    @property
    def context_window(self) -> Optional[int]:
        return self.connector.context_window

    @property
    def max_concurrency(self) -> Optional[int]:
        """Requests the provider takes at once (``[provider.X] max_concurrency``; 1 for an in-process model), or
        None when it sets no limit."""
        return getattr(self.connector, "max_concurrency", None)

    def complete(self, messages: list[Message], purpose: Optional[Purpose] = None,
                 reply_format: Optional[ReplyFormat] = None) -> Completion:
        """One call; ``purpose`` defaults to ``turn`` for the root role and ``sub_call`` for the sub role.

        ``reply_format`` (the environment's) is passed on for turns only, when :func:`reply_format_for` allows;
        the keyword is left out otherwise, so a connector written before it existed keeps working.
        """
        self.budget.check()
        purpose = purpose or ("turn" if self.role == "root" else "sub_call")
        enforced = reply_format_for(self.connector, reply_format, self.reply_format_mode) if purpose == "turn" else None
        extra = {"reply_format": enforced} if enforced is not None else {}
        # emitted outside the model's time: what it costs is the engine's (reply_format: the trajectory says which
        # calls were held to a reply shape)
        call = {"call": next_call(), "role": self.role, "model": self.name, "provider": self.provider,
                "purpose": purpose, **({} if enforced is None else {"reply_format": enforced.name})}
        self._emit("model_call_start", dict(call))
        started = time.monotonic()
        try:
            completion = self.budget.unless_cancelled(lambda: self.connector.complete(
                messages, timeout=max(1.0, self.budget.remaining()), on_retry=self._on_retry, purpose=purpose, **extra))
        except BaseException as exc:
            self._emit("model_call_end", {**call, "seconds": round(time.monotonic() - started, 3),
                                          "error": error_line(f"{type(exc).__name__}: {exc}")},
                       content={"messages": messages})
            raise
        finally:
            with self._lock:
                self.waited.seconds += time.monotonic() - started
        text = valid_unicode(completion.text) if completion.text else completion.text
        if text is not completion.text:  # lone surrogates from a JSON body: U+FFFD, so the text encodes
            completion = completion.model_copy(update={"text": text})
        if completion.cost is None:  # priced here when the model's price is known
            cost = (self.prices or default_table()).cost(self.name, completion.input_tokens, completion.output_tokens,
                                                         base_url=endpoint(self.connector))
            if cost is not None:
                completion = completion.model_copy(update={"cost": cost})
        with self._lock:
            self.usage.add(completion.input_tokens, completion.output_tokens, completion.cost)
        # said before the budget's charge, which may end the run: the call did end
        self._emit("model_call_end", {**call, "input_tokens": completion.input_tokens,
                                      "output_tokens": completion.output_tokens, "cost": completion.cost,
                                      "seconds": round(time.monotonic() - started, 3)},
                   content={"messages": messages, "reply": completion.text})
        self.budget.charge(completion.input_tokens + completion.output_tokens, completion.cost)
        return completion

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` for this model: the connector's own count when it has one, else the estimate."""
        return count_tokens(text, self.connector)

    def _on_retry(self, attempt: int, wait: float, reason: str) -> None:
        self._emit("model_retry", {"role": self.role, "model": self.name, "provider": self.provider,
                                   "attempt": attempt, "wait": round(wait, 3), "reason": reason})
