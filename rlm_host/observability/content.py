"""The one content policy of every sink: whether run content leaves the machine, and how much of each text.

Content is the task, the context, prompts and messages, replies, code, its output, the answer, and error text
(which may quote any of them). rlm exports it by default, since naming a sink is the user's choice to see runs
in that backend. :func:`content_policy` decides it for one sink: its ``capture_content`` setting when set, else
the GenAI convention's switch ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``false`` or
``NO_CONTENT`` turn it off). Every sink asks it and sends content only through the :class:`ContentPolicy` it
returns: span attributes and events (``SpanBuilder``), params, tags and run names, error messages (``error``:
their class alone when content is off), uploaded files such as the trajectory (``artifact``). With content off
the tree, sizes, token counts, costs, timings, step kinds and model names still go. Each text is redacted, then
cut to ``max_chars`` (``rlm_host.redact.redacted_clip``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

from pydantic import BaseModel, Field

from rlm_host.observability.span_records import error_type
from rlm_host.redact import redacted_clip

#: The GenAI semantic conventions' switch for message content.
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Characters of one text attribute (a task, an answer, a message list as JSON, code, output) by default.
DEFAULT_MAX_CHARS = 16_000
#: Characters of an error message (a span's status, a tag) when content is captured.
ERROR_CHARS = 500
_OFF = {"false", "0", "no", "off", "no_content", "none"}


@dataclass(frozen=True)
class ContentPolicy:
    """Whether content is captured, and the size of one captured text (made by :func:`content_policy`)."""

    capture: bool
    max_chars: int = DEFAULT_MAX_CHARS

    def text(self, value: Any, limit: Optional[int] = None) -> Optional[str]:
        """``value`` (a string, or anything JSON can show) redacted and cut to ``max_chars`` (or ``limit``, when
        smaller); None when content is not captured or there is none."""
        if not self.capture or value is None:
            return None
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return redacted_clip(text, min(self.max_chars, limit or self.max_chars))

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> Optional[str]:
        """Chat messages as the GenAI convention's ``gen_ai.input.messages`` JSON (``role`` and text ``parts``),
        within ``max_chars``: the first (system) message and the latest ones are kept, the middle is elided."""
        if not self.capture or not messages:
            return None
        share = self.max_chars if len(messages) == 1 else max(200, self.max_chars // 4)  # of one message
        items = [_message(m, share) for m in messages]
        kept_tail: list[dict[str, Any]] = []
        size = _size(items[0]) + 80
        for item in reversed(items[1:]):
            if size + _size(item) > self.max_chars and kept_tail:
                break
            kept_tail.insert(0, item)
            size += _size(item)
        left_out = len(items) - 1 - len(kept_tail)
        elided = [_message({"role": "system", "content": f"[{left_out} earlier message(s) left out]"}, 100)]
        return json.dumps(items[:1] + elided * bool(left_out) + kept_tail, ensure_ascii=False)

    def reply(self, text: Optional[str], finish_reason: str = "stop") -> Optional[str]:
        """A model's reply as ``gen_ai.output.messages`` JSON."""
        if not self.capture or text is None:
            return None
        message = _message({"role": "assistant", "content": text}, self.max_chars)
        return json.dumps([{**message, "finish_reason": finish_reason}], ensure_ascii=False)

    def error(self, message: Any, limit: int = ERROR_CHARS) -> str:
        """An error message as it may leave: redacted and cut to ``limit`` when content is captured, else only
        its class (``ValueError``, or ``error``): the message may quote the task, a prompt, code or output."""
        text = str(message or "error")
        return (redacted_clip(text, limit, "ellipsis") or "error") if self.capture else error_type(text)

    def artifact(self, path: Union[str, Path, None]) -> Optional[Path]:
        """A file a sink would upload (the trajectory: every step's code, output and answer), or None when content
        is not captured, or there is no such file."""
        return Path(path) if self.capture and path and Path(path).is_file() else None


def _message(message: Mapping[str, Any], limit: int) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    return {"role": str(message.get("role") or "user"),
            "parts": [{"type": "text", "content": redacted_clip(content, limit)}]}


def _size(item: Mapping[str, Any]) -> int:
    return len(item["parts"][0]["content"]) + 60


def content_policy(settings: Any = None, environ: Optional[Mapping[str, str]] = None) -> ContentPolicy:
    """The content policy of a sink with these settings: their ``capture_content`` when set, else
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (of ``environ``, default the process's), and their
    ``content_max_chars``. ``settings`` may be any object (None, or a model without those fields: the variable)."""
    capture = getattr(settings, "capture_content", None)
    if capture is None:
        value = (os.environ if environ is None else environ).get(CAPTURE_ENV, "").strip().lower()
        capture = value not in _OFF
    return ContentPolicy(bool(capture), getattr(settings, "content_max_chars", None) or DEFAULT_MAX_CHARS)


def chat_messages(genai_json: Any) -> list[dict[str, str]]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON as plain chat messages (``role``, ``content``:
    the text parts joined), the shape Langfuse, LangSmith and MLflow render as a conversation; [] when unreadable."""
    try:
        items = json.loads(genai_json) if isinstance(genai_json, str) else genai_json
    except ValueError:
        return []
    messages = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            parts = found if isinstance(found := item.get("parts"), list) else []
            text = "".join(str(p.get("content", "")) for p in parts if isinstance(p, dict))
            messages.append({"role": str(item.get("role") or "user"), "content": text})
    return messages


class ContentSettings(BaseModel):
    """The content fields every tracing sink's settings share (``[sink.NAME] capture_content``,
    ``content_max_chars``); :func:`content_policy` reads them."""

    capture_content: Optional[bool] = Field(None, description="send tasks, answers, prompts, replies, code, output "
                                            f"and error text (default: yes, unless {CAPTURE_ENV}=false)")
    content_max_chars: int = Field(DEFAULT_MAX_CHARS, ge=200, le=1_000_000,
                                   description="characters of one text sent (a task, a message list, code, output)")
