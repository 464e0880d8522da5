"""The ``direct-llm`` mode: the baseline the RLM paper compares against — task and context in one prompt.

The context is written into the prompt as text (documents one after another, JSON as JSON) and, when it does
not fit the model's window, cut in the middle to fit (the head and the tail are kept); the case result notes
the cut. Tokens are counted by the model when its connector can (``count_tokens``), else estimated. One model
call, no REPL, no sub-calls.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rlm_host import ModelError
from rlm_host.sdk.environments import document_names
from rlm_host.sdk.models import ModelConnector, count_tokens

DEFAULT_WINDOW = 32_768  # tokens, when the connector does not say
RESERVED_TOKENS = 1_024  # room left for the instructions and the answer
SYSTEM = "Answer the question using the context. Reply with the answer only, as briefly as possible."


@dataclass
class DirectOutcome:
    text: Optional[str]
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Optional[float] = None
    seconds: float = 0.0
    error: Optional[str] = None
    notes: list[str] = field(default_factory=list)


def render_context(context: Any) -> str:
    """The context as prompt text."""
    if context is None:
        return ""
    if isinstance(context, str):
        return context
    if isinstance(context, list):
        docs = (doc if isinstance(doc, str) else json.dumps(doc, ensure_ascii=False) for doc in context)
        return "\n\n".join(f"[{name}]\n{doc}" for name, doc in zip(document_names(context), docs))
    return json.dumps(context, ensure_ascii=False, indent=1, default=str)


def fit(text: str, max_chars: int) -> tuple[str, Optional[str]]:
    """``text`` cut in the middle to ``max_chars`` (with a marker), and a note saying so; unchanged if it fits."""
    if len(text) <= max_chars:
        return text, None
    marker = "\n[… {cut:,} characters cut to fit the model's context window …]\n"
    keep = max(0, max_chars - len(marker.format(cut=len(text))))
    head, tail = keep // 2, keep - keep // 2
    cut = len(text) - head - tail
    fitted = text[:head] + marker.format(cut=cut) + (text[-tail:] if tail else "")
    return fitted, f"context truncated for direct-llm: {len(text):,} → {head + tail:,} characters kept (middle cut)"


def fit_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> tuple[str, Optional[str]]:
    """``text`` cut in the middle (see :func:`fit`) until ``count`` makes it at most ``max_tokens`` tokens, and a
    note saying so; unchanged if it fits. Each try keeps as many characters as the last one's tokens allow."""
    tokens = count(text)
    if tokens <= max_tokens:
        return text, None
    max_chars = len(text) * max_tokens // tokens
    while True:
        fitted, note = fit(text, max_chars)
        tokens = count(fitted)
        if max_chars <= 0 or tokens <= max_tokens:
            return fitted, note
        max_chars = min(max_chars - 1, max_chars * max_tokens // tokens)


def build_messages(task: str, context: Any, window_tokens: Optional[int],
                   model: Any = None) -> tuple[list[dict[str, str]], list[str]]:
    """The one prompt of a direct call, sized to ``window_tokens`` in ``model``'s tokens (estimated when it
    cannot count them); notes about any truncation."""
    window = window_tokens or DEFAULT_WINDOW

    def count(text: str) -> int:
        return count_tokens(text, model)

    budget = max(0, window - RESERVED_TOKENS - count(task) - count(SYSTEM))
    text, note = fit_tokens(render_context(context), budget, count)
    notes = [note] if note else []
    if window_tokens is None:
        notes.append(f"model window unknown: {DEFAULT_WINDOW:,} tokens assumed")
    user = f"Context:\n{text}\n\nQuestion: {task}" if context is not None else f"Question: {task}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}], notes


def run_direct(connector: ModelConnector, task: str, context: Any, timeout: Optional[float] = None) -> DirectOutcome:
    """One call; a ModelError becomes the outcome's error (the case is then recorded as an error)."""
    messages, notes = build_messages(task, context, connector.context_window, connector)
    started = time.monotonic()
    try:
        completion = connector.complete(messages, timeout=timeout)
    except ModelError as exc:
        return DirectOutcome(None, seconds=time.monotonic() - started, error=str(exc), notes=notes)
    return DirectOutcome(
        text=completion.text.strip() if completion.text else completion.text,
        input_tokens=completion.input_tokens, output_tokens=completion.output_tokens, cost=completion.cost,
        seconds=time.monotonic() - started, notes=notes,
    )
