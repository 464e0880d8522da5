"""Run events: the one stream the trajectory store, the live CLI view, replay and every sink read.

The runner emits ``run_start``, ``step``, ``sub_call``, ``compaction``, ``model_retry``, ``final`` and ``error``
events on an ``EventBus``; subscribers receive every event in order. A subscriber that raises is disabled with
one warning so observability never breaks a run.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from typing import Any, Callable, Literal, Optional, Protocol

from pydantic import BaseModel, Field

from rlm_host.text import clip

EventType = Literal["run_start", "step", "sub_call", "compaction", "model_retry", "final", "error"]


class RunEvent(BaseModel):
    """One event. ``run_id`` is the run that emitted it; child runs carry their parent's id and depth + 1.

    ``data`` per type:
    - run_start: task, environment, framework, model, sub_model, sandbox, settings, context metadata
    - step: a StepRecord (step, action, code, reply, observation, reward, usage, model_seconds, duration_s)
    - sub_call: kind (llm_query, llm_query_batched, rlm_query, delegate), model, prompt (truncated),
      prompt_hash, response (truncated; ``response_full`` holds the whole text when it was cut) or error, usage,
      seconds, child_run_id
    - compaction: turns_before, turns_after, summary
    - model_retry: role (root / sub), model, attempt (1-based number of the attempt that failed), wait (seconds
      before the next attempt), reason ("HTTP 429 Too Many Requests")
    - final: the RunResult
    - error: message, where
    """

    type: EventType
    run_id: str
    root_run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    seq: int = 0
    ts: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)


class Sink(Protocol):
    """An observability sink (``SinkSpec`` factory: ``factory(settings, services) -> Sink``).

    ``handle`` receives every event of a run tree in order, from the thread that emitted it (batched sub-calls
    emit from several threads, one at a time): keep it fast and buffer slow work yourself. ``close`` is called
    once when the run tree ends, also after a failure; it must be safe to call twice. An exception disables the
    sink for the rest of the run with one warning; the run goes on.
    """

    def handle(self, event: RunEvent) -> None: ...

    def close(self) -> None: ...


#: Characters of a prompt or a response kept in a ``sub_call`` event (the whole text is hashed).
SUB_CALL_TEXT_CHARS = 500


def prompt_hash(prompt: str) -> str:
    """A short digest of a whole sub-call prompt, recorded so a replay can match calls made in any order."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sub_call_text(text: Optional[str]) -> Optional[str]:
    """A prompt or response as a ``sub_call`` event keeps it."""
    return clip(text, SUB_CALL_TEXT_CHARS, "count")


Subscriber = Callable[[RunEvent], None]


class EventBus:
    """Delivers events to subscribers synchronously, in emission order, from any thread."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str, Subscriber]] = []
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def subscribe(self, name: str, subscriber: Subscriber) -> None:
        self._subscribers.append((name, subscriber))

    def emit(self, event: RunEvent) -> RunEvent:
        with self._lock:
            event.seq = next(self._seq)
            for entry in list(self._subscribers):
                name, subscriber = entry
                try:
                    subscriber(event)
                except Exception as exc:  # a failing sink must never break the run
                    self._subscribers.remove(entry)
                    from rlm_host import logs

                    logs.get_logger("rlm.events").warning(
                        f"event subscriber {name} failed and was disabled: {type(exc).__name__}: {exc}"
                    )
        return event
