"""The growing message history of a pure_rlm run, and its compaction.

History grows in full by default. When its size passes a share of the root model's context window, the older
turns are replaced by a model-written summary and the last ``keep_last_turns`` turns are kept. The size is the
larger of what the provider counted for the last prompt and ``count`` over the messages: the root model's own
token count when its connector offers one, else the estimate (``rlm_host.tokens``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from rlm_host.models.protocol import Message
from rlm_host.tokens import CHARS_PER_TOKEN, estimate_tokens


@dataclass
class History:
    system: Message
    opening: Message
    turns: list[tuple[Message, Message]] = field(default_factory=list)  # (assistant reply, user observation)
    summary: Optional[str] = None
    last_prompt_tokens: int = 0  # what the provider counted for the last prompt; 0 when unknown
    count: Callable[[str], int] = estimate_tokens  # tokens of a text for the root model

    def messages(self) -> list[Message]:
        summary = [{"role": "user", "content": f"Summary of the earlier steps (compacted):\n{self.summary}"}]
        return [self.system, self.opening, *(summary if self.summary else []),
                *(m for turn in self.turns for m in turn)]

    def add_turn(self, reply: str, observation: str) -> None:
        self.turns.append(({"role": "assistant", "content": reply}, {"role": "user", "content": observation}))

    def needs_compaction(self, context_window: int, threshold: float) -> bool:
        """Over the threshold with at least one turn to fold in (``compact`` then keeps fewer than asked)."""
        tokens = max(self.count("".join(m["content"] for m in self.messages())), self.last_prompt_tokens)
        return bool(self.turns) and tokens > threshold * context_window

    def clipped_messages(self, max_tokens: int) -> list[Message]:
        """The messages with each one cut to an equal share of ``max_tokens``, so the summarising call itself
        fits the window even when the history no longer does."""
        messages = self.messages()
        share = max(200, max_tokens * CHARS_PER_TOKEN // len(messages))
        return [m if len(m["content"]) <= share else {**m, "content": m["content"][: share // 2] + "\n…\n"
                                                       + m["content"][-share // 2:]} for m in messages]

    def compact(self, summarise: Callable[[list[Message]], str], keep_last_turns: int,
                context_window: int = 1 << 30) -> tuple[int, int]:
        """Replace older turns with a summary, keeping the last ``keep_last_turns`` (always folding at least one);
        returns (turns before, turns after)."""
        before = len(self.turns)
        keep = min(keep_last_turns, before - 1)
        self.summary = summarise(self.clipped_messages(int(context_window * 0.7)))
        self.turns = self.turns[-keep:] if keep > 0 else []
        self.last_prompt_tokens = 0
        return before, len(self.turns)
