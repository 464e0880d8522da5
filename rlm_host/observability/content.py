"""What content (tasks, answers, prompts, replies, code, output) the sinks send, and how much of it.

rlm exports content by default, since naming a sink is the user's choice to see runs in that backend. It follows
the GenAI convention's switch too: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false`` (or
``NO_CONTENT``) turns content off, and a sink's own ``capture_content`` setting wins over the variable. Each
text is cut to ``max_chars`` and scrubbed of known secrets (``rlm_host.redact``) before it leaves.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import BaseModel, Field

from rlm_host.redact import redact
from rlm_host.text import clip

#: The GenAI semantic conventions' switch for message content.
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: Characters of one text attribute (a task, an answer, a message list as JSON, code, output) by default.
DEFAULT_MAX_CHARS = 16_000
_OFF = {"false", "0", "no", "off", "no_content", "none"}


@dataclass(frozen=True)
class ContentPolicy:
    """Whether content is captured, and the size of one captured text."""

    capture: bool = True
    max_chars: int = DEFAULT_MAX_CHARS

    def text(self, value: Any) -> Optional[str]:
        """``value`` (a string, or anything JSON can show) cut to ``max_chars`` and redacted; None when content
        is not captured or there is none."""
        if not self.capture or value is None:
            return None
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return redact(clip(text, self.max_chars, "count"))

    def messages(self, messages: Sequence[Mapping[str, Any]]) -> Optional[str]:
        """Chat messages as the GenAI convention's ``gen_ai.input.messages`` JSON (``role`` and text ``parts``),
        within ``max_chars``: the first (system) message and the latest ones are kept, the middle is elided."""
        if not self.capture or not messages:
            return None
        share = max(200, self.max_chars // 4)
        items = [_message(m, share) for m in messages]
        if len(items) == 1:
            items[0]["parts"][0]["content"] = redact(clip(items[0]["parts"][0]["content"], self.max_chars, "count"))
            return json.dumps(items, ensure_ascii=False)
        kept_tail: list[dict[str, Any]] = []
        size = _size(items[0]) + 80
        for item in reversed(items[1:]):
            if size + _size(item) > self.max_chars and kept_tail:
                break
            kept_tail.insert(0, item)
            size += _size(item)
        left_out = len(items) - 1 - len(kept_tail)
        head = [items[0]]
        if left_out:
            head.append({"role": "system", "parts": [{"type": "text",
                                                      "content": f"[{left_out} earlier message(s) left out]"}]})  # fmt: skip
        return redact(json.dumps(head + kept_tail, ensure_ascii=False))

    def reply(self, text: Optional[str], finish_reason: str = "stop") -> Optional[str]:
        """A model's reply as ``gen_ai.output.messages`` JSON."""
        if not self.capture or text is None:
            return None
        message = {"role": "assistant", "parts": [{"type": "text", "content": clip(text, self.max_chars, "count")}],
                   "finish_reason": finish_reason}  # fmt: skip
        return redact(json.dumps([message], ensure_ascii=False))


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
            parts = item.get("parts") if isinstance(item.get("parts"), list) else []
            text = "".join(str(p.get("content", "")) for p in parts if isinstance(p, dict))
            messages.append({"role": str(item.get("role") or "user"), "content": text})
    return messages


def _message(message: Mapping[str, Any], limit: int) -> dict[str, Any]:
    content = message.get("content")
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False, default=str)
    return {"role": str(message.get("role") or "user"),
            "parts": [{"type": "text", "content": clip(content, limit, "count")}]}  # fmt: skip


def _size(item: Mapping[str, Any]) -> int:
    return len(item["parts"][0]["content"]) + 60


def content_policy(capture: Optional[bool] = None, max_chars: Optional[int] = None,
                   environ: Optional[Mapping[str, str]] = None) -> ContentPolicy:  # fmt: skip
    """The policy from a sink's settings (None: not set) and ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``."""
    if capture is None:
        value = (os.environ if environ is None else environ).get(CAPTURE_ENV, "").strip().lower()
        capture = value not in _OFF
    return ContentPolicy(capture, max_chars or DEFAULT_MAX_CHARS)


class ContentSettings(BaseModel):
    """The content fields every tracing sink's settings share (``[sink.NAME] capture_content``,
    ``content_max_chars``)."""

    capture_content: Optional[bool] = Field(None, description="send tasks, answers, prompts, replies, code and "
                                            f"output (default: yes, unless {CAPTURE_ENV}=false)")  # fmt: skip
    content_max_chars: int = Field(DEFAULT_MAX_CHARS, ge=200, le=1_000_000,
                                   description="characters of one text sent (a task, a message list, code, output)")

    def content_policy(self, environ: Optional[Mapping[str, str]] = None) -> ContentPolicy:
        return content_policy(self.capture_content, self.content_max_chars, environ)
