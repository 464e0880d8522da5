"""Provider-agnostic retries: exponential backoff with full jitter, ``Retry-After`` honoured, one clear error.

A provider wraps its request in a zero-argument callable and hands it to :func:`call_with_retries` together
with a *classifier*: a function that turns an exception raised by the callable into a :class:`Failure`
(retryable or not, with a readable message), or returns None for exceptions it does not know (those propagate
unchanged). Waits follow ``Retry-After`` when the server sent one, otherwise "full jitter" backoff
(a uniform draw in ``[0, min(cap, base * 2 ** (attempt - 1))]``); every wait is capped. Each retry is reported
to an optional ``on_retry(attempt, wait_seconds, reason)`` callback so the engine can record it; after the last
attempt a single :class:`~rlm_host.models.protocol.ModelError` says what happened::

    openai:gpt-4o-mini: HTTP 429 Too Many Requests after 5 attempts
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from http import HTTPStatus
from typing import TypeVar

from rlm_host.models.protocol import ModelError, RetryCallback

T = TypeVar("T")

#: HTTP statuses worth another attempt besides every 5xx: request timeout, conflict, rate limit.
RETRYABLE_4XX = frozenset({408, 409, 429})


@dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait between attempts (seconds)."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 60.0  # cap of one wait, Retry-After included

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Full-jitter wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** max(0, attempt - 1)))
        return (rng or random).uniform(0.0, ceiling)

    def wait_for(self, attempt: int, retry_after: float | None, rng: random.Random | None = None) -> float:
        """The wait before the next attempt: the server's Retry-After when given, else backoff; capped."""
        wait = retry_after if retry_after is not None else self.backoff(attempt, rng)
        return max(0.0, min(wait, self.max_delay))


@dataclass(frozen=True)
class Failure:
    """A classifier's verdict on one exception.

    ``message`` names what happened ("HTTP 500 Internal Server Error"); ``retry_after`` is the server's
    requested wait in seconds, when it sent one; ``hint`` becomes the final error's hint.
    """

    retryable: bool
    message: str
    retry_after: float | None = None
    hint: str = ""


#: Turns an exception into a Failure, or None to let it propagate untouched.
Classifier = Callable[[BaseException], Failure | None]


def is_retryable_status(status: int) -> bool:
    """True for 408, 409, 429 and every 5xx; other statuses (401, 400, 404…) will not change on retry."""
    return status in RETRYABLE_4XX or status >= 500


def status_text(status: int) -> str:
    """``"HTTP 429 Too Many Requests"`` (or just ``"HTTP 599"`` for a status without a standard phrase)."""
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date; None when absent or bad."""
    value = (value or "").strip()
    with contextlib.suppress(ValueError):
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    try:
        when = email.utils.parsedate_to_datetime(value)  # "" and what is no date: ValueError
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0.0, (when - now).total_seconds())


def retry_after_from_headers(headers: Mapping[str, str] | None) -> float | None:
    """The wait a response asks for: ``retry-after-ms`` (OpenAI's) first, then ``Retry-After``."""
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    millis = parse_retry_after(lowered.get("retry-after-ms"))
    return millis / 1000.0 if millis is not None else parse_retry_after(lowered.get("retry-after"))


def call_with_retries(fn: Callable[[], T], classify: Classifier, *, policy: RetryPolicy | None = None,
                      what: str = "model call", on_retry: RetryCallback | None = None,
                      sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> T:
    """Call ``fn`` until it succeeds, a failure is not retryable, or ``policy.max_retries`` retries are spent.

    ``what`` prefixes the final error ("openai:gpt-4o-mini"). Exceptions the classifier does not know
    propagate as they are; known ones end as one ModelError chained to the last exception.
    """
    policy = policy or RetryPolicy()
    attempts = policy.max_retries + 1
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if not failure.retryable:
                raise ModelError(f"{what}: {failure.message}", hint=failure.hint) from exc
            if attempt >= attempts:
                plural = "attempt" if attempts == 1 else "attempts"
                raise ModelError(f"{what}: {failure.message} after {attempts} {plural}", hint=failure.hint) from exc
            wait = policy.wait_for(attempt, failure.retry_after, rng)
            if on_retry is not None:
                on_retry(attempt, wait, failure.message)
            if wait > 0:
                sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


__all__ = ["RETRYABLE_4XX", "Classifier", "Failure", "RetryCallback", "RetryPolicy", "call_with_retries",
           "is_retryable_status", "parse_retry_after", "retry_after_from_headers", "status_text"]
