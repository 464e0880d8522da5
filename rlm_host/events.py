"""Run events: the one stream the trajectory store, the live CLI view, replay and every sink read.

The runner emits ``run_start``, ``step``, ``sub_call``, ``compaction``, ``model_retry``, ``final`` and ``error``
events on an ``EventBus``, and the live events that say what is in progress: ``step_start``, ``model_call_start`` /
``model_call_end``, ``code_start`` / ``code_end``, ``sub_call_start`` (its end is the ``sub_call``) and
``child_run_start`` / ``child_run_end`` (their typed payloads: ``rlm_host.event_types``, ``RunEvent.payload()``).
Subscribers receive every event in order, or only the types they asked for. A subscriber that raises is disabled with
one warning so observability never breaks a run; a sink disabled that way (or for hanging) is recorded as a
``sink_error`` event. Names follow the OpenTelemetry GenAI conventions where they
have one (``operation``, ``provider``, ``input_tokens`` / ``output_tokens``), so a sink maps them one to one;
docs/schemas.md describes every field.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Literal, Optional, Protocol

from pydantic import BaseModel, Field, model_validator

from rlm_host.redact import redact_data, redacted_clip

EventType = Literal["run_start", "step", "sub_call", "compaction", "model_retry", "final", "error", "sink_error",
                    "step_start", "model_call_start", "model_call_end", "code_start", "code_end", "sub_call_start",
                    "child_run_start", "child_run_end", "branch"]
#: Every event type, for checking a subscription's filter.
EVENT_TYPES: frozenset[str] = frozenset(EventType.__args__)  # type: ignore[attr-defined]
#: What an event describes, as ``gen_ai.operation.name``: a run, a model call, a sandbox code execution.
Operation = Literal["invoke_agent", "chat", "execute_tool"]


def operation_of(type_: str, data: Mapping[str, Any]) -> Optional[Operation]:
    """The operation an event describes: run_start and final bracket a run (invoke_agent); a sub_call is a model
    call (chat) or a child run (invoke_agent, it names ``child_run_id``); a compaction is the summary's model call;
    a step ran code in the sandbox (execute_tool, it has ``code``) or was a model reply alone (chat). model_retry
    and error describe no operation of their own (None). Of the live events, model_call_* and sub_call_start are
    chat (a sub_call_start of an rlm_query: invoke_agent), code_* execute_tool, child_run_* invoke_agent and
    step_start none."""
    if type_ == "sub_call_start":
        return "invoke_agent" if data.get("kind") == "rlm_query" else "chat"
    if type_ == "sub_call":
        return "invoke_agent" if data.get("child_run_id") else "chat"
    if type_ == "step":
        return "execute_tool" if data.get("code") else "chat"
    return _OPERATIONS.get(type_)


#: The operation of each event type that always describes the same one.
_OPERATIONS: dict[str, Operation] = {
    **dict.fromkeys(("run_start", "final", "child_run_start", "child_run_end"), "invoke_agent"),
    **dict.fromkeys(("model_call_start", "model_call_end", "compaction"), "chat"),
    **dict.fromkeys(("code_start", "code_end"), "execute_tool"),
}


class RunEvent(BaseModel):
    """One event. ``run_id`` is the run that emitted it; child runs carry their parent's id and depth + 1.

    ``operation`` is derived from the type and data when not given (see :func:`operation_of`). ``data`` per type:
    - run_start: schema_version, task, environment, framework, model, provider, sub_model, sub_provider, sandbox,
      settings, context metadata, notices
    - step: a StepRecord (step, action, code, reply, observation, reward, usage, model_seconds, duration_s)
    - sub_call: kind (llm_query, llm_query_batched, rlm_query, delegate), model, provider, prompt (truncated),
      prompt_hash, response (truncated; ``response_full`` holds the whole text when it was cut) or error, usage
      (input_tokens, output_tokens), seconds, child_run_id
    - compaction: step, turns_before, turns_after, summary
    - model_retry: role (root / sub), model, provider, attempt (1-based number of the attempt that failed), wait
      (seconds before the next attempt), reason ("HTTP 429 Too Many Requests")
    - final: the RunResult
    - error: message, where
    - sink_error: sink (its name), error (why it was disabled for the rest of the run)
    - branch: one candidate reply of a root step under ``branch_width`` (step, candidate, reply, action, code,
      output, error, score, chosen), tried in a throwaway copy of the REPL before the step
    - step_start, model_call_start, model_call_end, code_start, code_end, sub_call_start, child_run_start,
      child_run_end: see ``rlm_host.event_types`` (``payload()`` returns them typed)
    """

    type: EventType
    operation: Optional[Operation] = None
    run_id: str
    root_run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    seq: int = 0
    ts: float = Field(default_factory=time.time)
    data: dict[str, Any] = Field(default_factory=dict)
    #: What a sink may export but the trajectory does not keep (never serialised): a ``model_call_end``'s
    #: ``messages`` sent and ``reply`` received, unredacted (a sink scrubs them: ``ContentPolicy``).
    content: Optional[dict[str, Any]] = Field(None, exclude=True, repr=False)

    @model_validator(mode="after")
    def _derive_operation(self) -> "RunEvent":
        if self.operation is None:
            self.operation = operation_of(self.type, self.data)
        return self

    def payload(self) -> Optional[BaseModel]:
        """The data as its typed model (``rlm_host.event_types.PAYLOADS``: the live events, ``step`` as a
        ``StepRecord``, ``final`` as a ``RunResult``), or None for a type without one."""
        from rlm_host.event_types import PAYLOADS
        from rlm_host.results import RunResult, StepRecord

        models: dict[str, type[BaseModel]] = {**PAYLOADS, "step": StepRecord, "final": RunResult}
        model = models.get(self.type)
        return None if model is None else model.model_validate(self.data)


class Sink(Protocol):
    """An observability sink (``SinkSpec`` factory: ``factory(settings, services) -> Sink``).

    ``handle`` receives every recorded event of a run tree in order (the live events too when the sink sets a
    ``live_events`` attribute: True, or the names of the live events it wants), one call at a time, from a thread of the
    sink's own (``rlm_host.observability.delivery``): it may block on a remote backend without slowing the run. An
    optional ``flush()`` is called each time the sink has caught up with the events queued so far (see below). ``close``
    is called once when the run tree ends, also after a failure, and must deliver what the sink still holds; the run
    waits for it only until ``[run] sink_flush_seconds``. It must be safe to call twice. A sink that raises or hangs is
    disabled for the rest of the run with one warning and a ``sink_error`` event; the run goes on.
    """

    def handle(self, event: RunEvent) -> None: ...

    def close(self) -> None: ...

    # Optional: ``flush(self) -> None`` is called whenever the sink has handled every event queued so far; a sink
    # that buffers in ``handle`` sends there, so it batches as much as its backend's speed requires.


#: Characters of a prompt or a response kept in a ``sub_call`` event (the whole text is hashed).
SUB_CALL_TEXT_CHARS = 500


def prompt_hash(prompt: str) -> str:
    """A short digest of a whole sub-call prompt, recorded so a replay can match calls made in any order."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def sub_call_text(text: Optional[str]) -> Optional[str]:
    """A prompt or response as a ``sub_call`` event keeps it: redacted before it is cut (the event's own
    redaction comes after the cut, too late for a secret the cut falls inside)."""
    return redacted_clip(text, SUB_CALL_TEXT_CHARS, "count")


Subscriber = Callable[[RunEvent], None]


def check_event_types(types: Optional[Iterable[str]]) -> Optional[frozenset[str]]:
    """A subscription's filter as a set (None: every type); a name that is no event type is a ValueError."""
    if types is None:
        return None
    wanted = frozenset([types] if isinstance(types, str) else types)
    unknown = sorted(wanted - EVENT_TYPES)
    if unknown:
        raise ValueError(f"unknown event type(s) {', '.join(unknown)}; known: {', '.join(sorted(EVENT_TYPES))}")
    return wanted


class EventBus:
    """Delivers events to subscribers synchronously, in emission order, from any thread.

    Subscribers run under the bus's lock, so they must be quick: the trajectory writer and the live view are;
    sinks subscribe through ``rlm_host.observability.delivery``, which only queues the event."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str, Subscriber, Optional[frozenset[str]]]] = []
        self._lock = threading.RLock()  # a subscriber may emit (a sink_error) while an event is delivered
        self._seq = itertools.count(1)

    def subscribe(self, name: str, subscriber: Subscriber, types: Optional[Iterable[str]] = None) -> None:
        """Deliver events to ``subscriber``: every event, or with ``types`` only events of those types (an unknown
        type name is a ValueError)."""
        self._subscribers.append((name, subscriber, check_event_types(types)))

    def emit(self, event: RunEvent) -> RunEvent:
        """Deliver ``event`` to every subscriber, its data redacted first (``rlm_host.redact``): what is recorded,
        shown or sent to a sink never holds a known secret or a URL's password."""
        # set in place: a pydantic attribute assignment costs more than the rest of a live event
        fields = event.__dict__
        fields["data"] = redact_data(fields["data"])
        with self._lock:
            fields["seq"] = next(self._seq)
            for entry in list(self._subscribers):
                name, subscriber, wanted = entry
                if wanted is not None and event.type not in wanted:
                    continue
                try:
                    subscriber(event)
                except Exception as exc:  # a failing sink must never break the run
                    self._subscribers.remove(entry)
                    from rlm_host import logs

                    logs.get_logger("rlm.events").warning("event subscriber disabled", subscriber=name,
                                                         error=f"{type(exc).__name__}: {exc}")
        return event
