"""Keeping a framework's chat inside the model's window, as a native run's history compaction does.

A framework sends its whole history every turn (pydantic-ai's messages, ADK's contents, LangGraph's state). When
that chat nears ``threshold`` of the model's context window, :class:`ChatCompactor` folds the older turns into one
summary (a ``purpose="compaction"`` call, counted and budgeted like any call, not a turn) and sends the system
messages, the task, the summary and the recent turns instead. The framework's own history is left as it is: the
summary stands for a prefix of it, remembered per conversation (its system messages and task: a sub-agent's chat
through the same model is another conversation), so later turns are folded onto it and each compaction summarises
only what is new. A ``compaction`` event records each fold (``turns_before``, ``turns_after``, ``summary``).
"""

from __future__ import annotations

import threading
from typing import Any, Optional

from rlm_host.environments.kit import truncate
from rlm_host.models.protocol import Message, merge_same_role
from rlm_host.tokens import CHARS_PER_TOKEN, count_tokens

COMPACTION_PROMPT = (
    "Summarise the work so far for your own later use: what you learned about the task and `context`, what the "
    "tools returned that still matters, what has been tried and what remains. Be specific and brief (at most 15 "
    "lines). Reply with the summary only."
)


class ChatCompactor:
    """Fits the chat a framework sends to one model role into that role's window (see the module docstring)."""

    def __init__(self, role: Any, *, threshold: float = 0.75, keep_last: int = 4) -> None:
        self.role, self.threshold, self.keep_last = role, threshold, keep_last
        self._summary: Optional[str] = None
        self._folded = 0  # messages of the framework's chat (after its head) that the summary stands for
        self._conversations: dict[int, tuple[Optional[str], int]] = {}  # head → (summary, folded)
        self._lock = threading.Lock()

    def fit(self, chat: list[Message]) -> list[Message]:
        """``chat`` as it is when it fits, else with its older turns folded into the summary."""
        window = getattr(self.role, "context_window", None)
        if not window:
            return chat
        with self._lock:
            head, turns = _split(chat)
            key = hash(tuple((m["role"], m["content"]) for m in head))
            self._summary, self._folded = self._conversations.get(key, (None, 0))
            if self._folded > len(turns):  # a shorter history: the framework started over
                self._summary, self._folded = None, 0
                self._conversations.pop(key, None)
            shown = self._shown(head, turns)  # as it is when it fits, when nothing is left to fold, or when the
            # framework's own prompt fills the window: folding turns cannot help (the provider says it is too long)
            if (self._tokens(shown) <= self.threshold * window or len(turns) - self._folded <= 1
                    or self._tokens(head) >= self.threshold * window):
                return shown
            fold_to, before = len(turns) - self._kept(head, turns, window), len(turns) - self._folded
            self._summary = self._summarise(head, turns[self._folded:fold_to], window)
            self._folded = fold_to
            self._conversations[key] = (self._summary, fold_to)
            scope = getattr(self.role, "scope", None)
            if scope is not None:
                scope.emit("compaction", {"step": None, "turns_before": before, "turns_after": len(turns) - fold_to,
                                          "summary": self._summary})
            return self._shown(head, turns)

    def _kept(self, head: list[Message], turns: list[Message], window: int) -> int:
        """How many recent turns stay as they are: up to ``keep_last``, as many as fit in half of what the window
        leaves beside the head (a summary takes the rest), and at least one."""
        room = self.threshold * window / 2 - self._tokens(head)
        kept, used = 0, 0
        for message in reversed(turns[self._folded + 1:]):  # at least one turn is folded
            used += self._tokens([message])
            if kept >= self.keep_last or used > room:
                break
            kept += 1
        return max(1, kept)

    def _shown(self, head: list[Message], turns: list[Message]) -> list[Message]:
        if self._summary is None:
            return head + turns
        note = {"role": "user", "content": f"Summary of the earlier work (older turns folded to fit):\n{self._summary}"}
        recent = turns[self._folded:]
        if recent and recent[0]["role"] == "user":  # keep the roles alternating after the summary
            recent = [{"role": "assistant", "content": "(continuing)"}, *recent]
        return head + [note] + recent

    def _summarise(self, head: list[Message], folding: list[Message], window: int) -> str:
        share = max(200, int(window * 0.6) * CHARS_PER_TOKEN // max(1, len(folding) + 2))
        shown = [{"role": m["role"], "content": truncate(m["content"], share)} for m in folding]
        earlier = ([{"role": "user", "content": f"Summary of the work before:\n{self._summary}"}]
                   if self._summary else [])
        task = [m for m in head if m["role"] != "system"][:1]
        messages = task + earlier + shown + [{"role": "user", "content": COMPACTION_PROMPT}]
        completion = self.role.complete(merge_same_role(messages), purpose="compaction")
        return (completion.text or "").strip() or "(the model returned no summary)"

    def _tokens(self, chat: list[Message]) -> int:
        return count_tokens("\n".join(m["content"] for m in chat), self.role)


def _split(chat: list[Message]) -> tuple[list[Message], list[Message]]:
    """(the system messages and the first user message — the task —, the turns after them)."""
    index = next((i for i, message in enumerate(chat) if message["role"] != "system"), len(chat))
    index += index < len(chat) and chat[index]["role"] == "user"
    return chat[:index], chat[index:]
