"""Typed payloads of the live run events: what is in progress (docs/schemas.md, "Live events").

The runner emits them as plain dicts (cheap: no validation on the hot path); ``RunEvent.payload()`` reads one
back as its model here. A start and its end carry the same ``call`` number (unique in the process), so a UI pairs
them even when calls overlap (``llm_query_batched``). An end can be missing when the run failed in between (the
run's ``step``, ``error`` or ``final`` event closes whatever was in progress); readers that do not know a type
ignore it.
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

from pydantic import BaseModel

from rlm_host.redact import redacted_clip

#: Characters of code, a task or an error a live event keeps (the step and sub_call events keep the rest).
LIVE_TEXT_CHARS = 500

#: The number pairing a ``*_start`` event with its ``*_end``.
next_call = itertools.count(1).__next__


def live_text(text: Optional[str], limit: int = LIVE_TEXT_CHARS) -> Optional[str]:
    """``text`` as a live event keeps it: redacted, then cut (the event's own redaction comes after the cut, too
    late for a secret the cut falls inside)."""
    if text is None or len(text) <= limit:
        return text
    return redacted_clip(text, limit, "ellipsis") + f" [{len(text):,} characters]"


class StepStart(BaseModel):
    """``step_start``: a root turn of the native loop begins (a framework reports its steps when done)."""

    step: int


class ModelCallStart(BaseModel):
    """``model_call_start``: a call to the model of ``role`` (root or sub) for ``purpose`` (turn, sub_call,
    compaction, synthesis) is sent."""

    call: int
    role: str
    model: str
    provider: str
    purpose: str
    reply_format: Optional[str] = None  # the reply format the provider enforced on this call (its name), if any


class ModelCallEnd(ModelCallStart):
    """``model_call_end``: the call's answer came (or ``error``: why it failed, after the connector's retries)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: Optional[float] = None
    seconds: float
    error: Optional[str] = None


class CodeStart(BaseModel):
    """``code_start``: a code block starts in the sandbox: ``step`` and ``block`` (1-based) in the native loop,
    both None for a framework's ``run_code``; ``code`` cut to 500 characters (the step event has it whole)."""

    call: int
    step: Optional[int] = None
    block: Optional[int] = None
    code: str


class CodeEnd(BaseModel):
    """``code_end``: the block finished after ``seconds``; ``ok`` False with the error's first line when it
    failed; ``final`` when it gave the final answer. Its output is in the step event."""

    call: int
    step: Optional[int] = None
    block: Optional[int] = None
    seconds: float
    ok: bool
    error: Optional[str] = None
    final: bool = False


class SubCallStart(BaseModel):
    """``sub_call_start``: a sub-call from the code begins; the ``sub_call`` event with the same ``kind`` (an
    rlm_query refused for depth ends as ``rlm_query(max_depth: plain llm_query)``), ``prompt_hash`` and ``index``
    is its end. ``prompt`` cut to 500 characters; ``model`` when the code named one."""

    kind: str
    prompt: str
    prompt_hash: Optional[str] = None
    index: Optional[int] = None
    model: Optional[str] = None


class ChildRunStart(BaseModel):
    """``child_run_start``: an ``rlm_query`` child run begins (emitted by the parent, before the child's
    ``run_start``)."""

    child_run_id: str
    task: str
    depth: int


class ChildRunEnd(BaseModel):
    """``child_run_end``: the child run ended (after its ``final``): its outcome, time, cost, or the error that
    stopped it before it could give one."""

    child_run_id: str
    completed: bool = False
    termination_reason: Optional[str] = None
    seconds: float
    cost: Optional[float] = None
    error: Optional[str] = None


#: The typed payload of each live event type.
PAYLOADS: dict[str, type[BaseModel]] = {
    "step_start": StepStart, "model_call_start": ModelCallStart, "model_call_end": ModelCallEnd,
    "code_start": CodeStart, "code_end": CodeEnd, "sub_call_start": SubCallStart, "child_run_start": ChildRunStart,
    "child_run_end": ChildRunEnd}

#: The live event types (readers that show only what happened leave these out).
LIVE_EVENT_TYPES: frozenset[str] = frozenset(PAYLOADS)


def error_line(error: Any) -> Optional[str]:
    """An error's first line, cut to 200 characters (None stays None)."""
    if not error:
        return None
    return live_text(str(error)[:2000].partition("\n")[0], 200)
