"""The ``replay`` provider: a new run answered with the model replies recorded in a saved run.

``--model replay:RUN`` (RUN: a run id, a unique prefix of one, ``latest``, or a path to a trajectory
``.jsonl``) plays back, in order, what the recorded run tree's root role received: each step's reply, the
answer synthesised when steps ran out, and — when the replaying run asks for one — each history-compaction
summary. Runs are looked up under ``[provider.replay] home`` when set, else the run home as ``rlm run`` reads
it (``$RLM_HOME``, ``[paths] home`` of rlm.toml or the user config; ``.rlm``); a path works from anywhere.

The same connector answers sub-calls (``llm_query`` and friends) with the recorded sub-call responses — so
``--sub-model replay:RUN`` replays them, and so does ``--model replay:RUN`` alone, since the sub role then shares
the root connector. A call whose messages start with a system prompt is a root call; a bare user message is a
sub-call. Sub-calls are matched to recordings by a digest of their whole prompt (``prompt_hash`` in the
``sub_call`` events; the full text of a long response is in ``response_full``), so concurrent
``llm_query_batched`` calls get their own answers whatever order they arrive in; a prompt recorded without a
digest, or never recorded, takes the next unused response in recorded order. A recorded failed sub-call
fails again with the same message.

Token counts are the recorded ones (a step's root tokens go to its reply), the cost is zero. Asking for more
than was recorded raises a ModelError: "replay of RUN: the recorded run had 2 root replies; this run asked for
a 3rd". The connector reports a very large context window, so a replay compacts its history only when the
environment's settings force a smaller window. Root replies of child runs are replayed depth first, in the
order they were made; children run concurrently (the generic environment's ``delegate_batch``) may therefore
not replay exactly.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from rlm_host import ModelError, RunEvent
from rlm_host.sdk.embedding import SYNTHESIS_REASONS, Replay, RunStore
from rlm_host.sdk.models import Completion, Message, Purpose
from rlm_host.sdk.observability import prompt_hash, sub_call_text

#: Large enough that history compaction never triggers on the connector's account.
REPLAY_CONTEXT_WINDOW = 1 << 30


class ReplaySettings(BaseModel):
    """``[provider.replay]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    home: Optional[Path] = Field(None, description="run home to look runs up in (default: the [paths] home)")


@dataclass(frozen=True)
class RecordedReply:
    """One recorded model answer: its text (None: no content), tokens, and where it was recorded.

    ``prompt_hash`` and ``prompt`` (clipped) identify a sub-call; ``error`` replays a failed call.
    """

    text: Optional[str]
    input_tokens: int = 0
    output_tokens: int = 0
    where: str = ""
    prompt_hash: Optional[str] = None
    prompt: Optional[str] = None
    error: Optional[str] = None


@dataclass
class Recording:
    """The model answers of a saved run tree, per kind of call, in the order they were made."""

    run_id: str
    model: str = ""
    root: list[RecordedReply] = field(default_factory=list)
    compaction: list[RecordedReply] = field(default_factory=list)
    sub: list[RecordedReply] = field(default_factory=list)
    outcome: str = "interrupted"

    @classmethod
    def from_events(cls, events: Iterable[RunEvent]) -> "Recording":
        """Read the answers out of a trajectory's events (see the module docstring)."""
        replay = Replay(events)
        result = replay.result
        outcome: str = "interrupted (no final event)" if result is None else result.termination_reason
        if result is not None and result.error:
            outcome += f": {result.error}"
        summaries = {(event.run_id, int(event.data.get("step") or 0)): str(event.data.get("summary") or "")
                     for event in replay.events if event.type == "compaction"}
        recording = cls(replay.root.run_id, str(replay.root.start.get("model") or ""), outcome=outcome)
        recording._add_root(replay.root, summaries)
        # the sub-calls that reached a model (not a child run, not refused by the budget before any model)
        recording.sub = [_sub_reply(e) for e in replay.events
                         if e.type == "sub_call" and "model" in e.data and e.data.get("kind") != "rlm_query"]
        return recording

    def _add_root(self, run: Any, summaries: dict[tuple[str, int], str]) -> None:
        """A run's root answers depth first: per step its reply, then its children's; the synthesis last."""
        for step in run.steps:
            summary = summaries.get((run.run_id, step.number))
            if summary is not None:
                self.compaction.append(RecordedReply(summary, where=f"compaction before step {step.number}"))
            usage = step.record.usage.root
            self.root.append(RecordedReply(step.record.reply, usage.input_tokens, usage.output_tokens,
                                           f"step {step.number} of {run.run_id}"))
            for child in step.children:
                self._add_root(child, summaries)
        for child in run.pending_children:
            self._add_root(child, summaries)
        result = run.result  # no synthesis when the steps did not run out, or its call failed (it answered nothing)
        if result is None or result.completed or result.termination_reason not in SYNTHESIS_REASONS or \
                any(e.data.get("where") == "synthesize" for e in run.errors):
            return
        usage = result.usage.root  # what the run's own steps did not use went to the synthesis
        used_in = sum(step.record.usage.root.input_tokens for step in run.steps)
        used_out = sum(step.record.usage.root.output_tokens for step in run.steps)
        self.root.append(RecordedReply(result.final_response, max(0, usage.input_tokens - used_in),
                                       max(0, usage.output_tokens - used_out), f"synthesised answer of {run.run_id}"))


def _sub_reply(event: RunEvent) -> RecordedReply:
    data = event.data
    usage = data.get("usage") or {}
    error = data.get("error") if not usage else None
    text = data.get("response_full", data.get("response"))
    return RecordedReply(None if text is None else str(text), int(usage.get("input_tokens") or 0),
                         int(usage.get("output_tokens") or 0), f"{data.get('kind', 'sub_call')} in {event.run_id}",
                         prompt_hash=data.get("prompt_hash"), prompt=data.get("prompt"),
                         error=str(error) if error else None)


def ordinal(number: int) -> str:
    """``1`` → ``"1st"``, ``12`` → ``"12th"``, ``23`` → ``"23rd"``."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


class ReplayConnector:
    """A ModelConnector answering from a :class:`Recording`; thread-safe."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.name = f"replay:{recording.run_id}"
        self.context_window: Optional[int] = REPLAY_CONTEXT_WINDOW
        self._next, self._sub_used = {"root": 0, "compaction": 0}, [False] * len(recording.sub)
        self._lock = threading.Lock()

    def left(self, kind: str) -> int:
        """How many recorded answers of ``kind`` (``root``, ``sub``) no call has taken yet."""
        with self._lock:
            return self._sub_used.count(False) if kind == "sub" else len(self.recording.root) - self._next["root"]

    def complete(self, messages: list[Message], *, timeout: Optional[float] = None, on_retry: Any = None,
                 purpose: Purpose = "turn", reply_format: Any = None) -> Completion:
        """The next recorded answer for this kind of call (see the module docstring); recorded replies already
        have whatever shape they had, so a ``reply_format`` changes nothing."""
        started = time.monotonic()
        if messages and messages[0].get("role") == "system":
            reply = self._take_next("compaction" if purpose == "compaction" else "root")
        else:
            reply = self._take_sub(str(messages[-1].get("content") or "") if messages else "")
        if reply.error is not None:
            raise ModelError(reply.error, hint=f"replayed from {self.recording.run_id} ({reply.where})")
        raw: dict[str, Any] = {"replay": self.recording.run_id, "recorded": reply.where}
        if reply.text is None:
            raw["malformed"] = "the recorded reply had no content"
        elif reply.text == "":
            raw["malformed"] = "the recorded reply was empty"
        return Completion(text=reply.text, model=self.recording.model or self.name, input_tokens=reply.input_tokens,
                          output_tokens=reply.output_tokens, cost=0.0, finish_reason="stop",
                          seconds=time.monotonic() - started, raw=raw)

    def _take_next(self, kind: str) -> RecordedReply:
        replies = self.recording.root if kind == "root" else self.recording.compaction
        with self._lock:
            index = self._next[kind]
            if index < len(replies):
                self._next[kind] = index + 1
                return replies[index]
        raise self._exhausted(len(replies), *(("root reply", "root replies") if kind == "root" else
                                              ("compaction summary", "compaction summaries")))

    def _take_sub(self, prompt: str) -> RecordedReply:
        digest, clipped = prompt_hash(prompt), sub_call_text(prompt)
        replies = self.recording.sub
        with self._lock:
            unused = [i for i, used in enumerate(self._sub_used) if not used]
            index = next(chain((i for i in unused if replies[i].prompt_hash == digest),
                               (i for i in unused if replies[i].prompt_hash is None and replies[i].prompt == clipped),
                               unused), None)
            if index is not None:
                self._sub_used[index] = True
                return replies[index]
        raise self._exhausted(len(replies), "sub-call response", "sub-call responses")

    def _exhausted(self, count: int, singular: str, plural: str) -> ModelError:
        asked = count + 1
        article = "an" if str(asked).startswith("8") or asked in (11, 18) else "a"
        return ModelError(f"replay of {self.recording.run_id}: the recorded run had {count} "
                          f"{singular if count == 1 else plural}; this run asked for {article} {ordinal(asked)}",
                          hint=f"the new run went past the recorded one (other settings or sandbox output?); the "
                          f"recorded run ended: {self.recording.outcome}")


def create(settings: ReplaySettings | Mapping[str, Any] | None, services: Any) -> ReplayConnector:
    """The provider factory named by the ``replay`` ProviderSpec: ``replay:RUN``, looked up in
    ``[provider.replay] home`` when set, else in the run home the host passes."""
    ref = services.model.strip()
    home: Path = services.home
    if not ref:
        raise ModelError("replay: no run given", hint="use replay:RUN_ID, replay:latest or replay:PATH/TO/run.jsonl")
    if isinstance(settings, Mapping):
        settings = ReplaySettings.model_validate(dict(settings))
    if settings is not None and settings.home is not None:
        home = Path(settings.home).expanduser()
    return ReplayConnector(Recording.from_events(RunStore(home).load(ref)))


__all__ = ["RecordedReply", "Recording", "ReplayConnector", "ReplaySettings", "create", "ordinal"]
