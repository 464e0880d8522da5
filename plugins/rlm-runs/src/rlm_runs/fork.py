"""Forks of a saved run: a new run whose first steps are the recorded ones, then goes on with other settings.

``fork_recording(replay, at)`` takes what the model answered in the recorded run's first ``at`` root steps (each
step's reply, the child runs those steps started, and the sub-calls made on the way) as a ``Recording``;
``ForkConnector`` answers the new run's calls from it while it lasts and from the run's own model after, so no
model is called for the replayed steps and their code runs again, rebuilding the REPL state. ``ForkWatch`` sees the
new run's steps: one that did not come out as recorded (another action, other code, other output) stops the run
at its next model call, naming the step — a fork continues from the recorded state or not at all.
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Any, Optional

from rlm_host import ModelError, RunEvent
from rlm_host.sdk.commands import clip
from rlm_host.sdk.embedding import Replay
from rlm_host.sdk.models import Completion, Message
from rlm_runs.provider import Recording, ReplayConnector

#: The labels a fork carries: the run it was forked from and the last replayed step.
FORK_OF, FORK_AT = "fork_of", "fork_at"


def fork_recording(replay: Replay, at: int) -> Recording:
    """The answers of the first ``at`` root steps of ``replay`` (1 ≤ at ≤ its steps), child runs and sub-calls
    included, in the order the new run will ask for them: the recording of the events up to the ``at``-th root
    step's (that step's child runs and sub-calls all end before it)."""
    last = replay.root.steps[at - 1].event
    cut = next(index for index, event in enumerate(replay.events) if event is last)
    recording = Recording.from_events(replay.events[:cut + 1])
    recording.outcome = f"forked at step {at}"
    return recording


class ForkWatch:
    """Compares the new run's root steps with the recorded ones up to the fork point; ``problem`` says where a
    step first came out otherwise (None while they agree)."""

    def __init__(self, replay: Replay, at: int) -> None:
        self.recorded = {step.number: step for step in replay.root.steps[:at]}
        self.at, self.source = at, replay.root.run_id
        self.problem: Optional[str] = None

    def __call__(self, event: RunEvent) -> None:
        if event.type != "step" or event.depth != 0 or self.problem is not None:
            return
        number = int(event.data.get("step") or 0)
        recorded = self.recorded.get(number)
        if recorded is None:
            return
        why = _difference(recorded.record.model_dump(mode="json"), event.data)
        if why:
            self.problem = (f"the fork of {self.source} diverged at step {number} of {self.at} replayed: {why}; "
                            "the recorded state cannot be rebuilt, so the run stops here")

    def check(self) -> None:
        if self.problem is not None:
            raise ModelError(self.problem, hint="the context, the sandbox or a tool answers otherwise than when the "
                             "run was recorded: fork at an earlier step, or give the same --context")


def _difference(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    if recorded.get("action") != now.get("action"):
        return f"the action was {recorded.get('action')!r}, now {now.get('action')!r}"
    if " ".join(str(recorded.get("code") or "").split()) != " ".join(str(now.get("code") or "").split()):
        return "its code differs"
    before, after = _outputs(recorded.get("observation")), _outputs(now.get("observation"))
    if before != after:
        was, new = next(((a, b) for a, b in zip_longest(before, after, fillvalue="") if a != b), ("", ""))
        return f"its output differs (recorded {clip(was, 80)!r}, now {clip(new, 80)!r})"
    return ""


def _outputs(observation: Any) -> list[str]:
    blocks = observation.get("blocks") if isinstance(observation, dict) else None
    return [f"{b.get('stdout') or ''}{b.get('error') or ''}" for b in blocks or [] if isinstance(b, dict)]


class ForkConnector:
    """A model connector that answers from the fork's recording while it lasts, then from ``then`` (the run's own
    model for this role); before every call it asks ``watch`` whether the replayed steps still agree."""

    def __init__(self, replay: ReplayConnector, then: Any, watch: ForkWatch) -> None:
        self.replay, self.then, self.watch = replay, then, watch
        self.name = then.name
        self.context_window = getattr(then, "context_window", None)

    def __getattr__(self, name: str) -> Any:  # the rest of the model's connector: provider, prices, warm_up…
        return getattr(self.then, name)

    def complete(self, messages: list[Message], **options: Any) -> Completion:
        self.watch.check()
        if self._recorded(messages, options.get("purpose", "turn")):
            return self.replay.complete(messages, **options)
        return self.then.complete(messages, **options)

    def _recorded(self, messages: list[Message], purpose: str) -> bool:
        if messages and messages[0].get("role") == "system":
            return purpose == "turn" and self.replay.left("root") > 0
        return self.replay.left("sub") > 0


def fork_wrapper(replay: Replay, at: int) -> tuple[Any, ForkWatch]:
    """``(wrap, watch)``: ``wrap(connector)`` makes the run's planned connector a ``ForkConnector`` (root and sub
    share one recording), ``watch`` is to be fed the new run's events."""
    recorded = ReplayConnector(fork_recording(replay, at))
    watch = ForkWatch(replay, at)
    return (lambda connector: ForkConnector(recorded, connector, watch)), watch


__all__ = ["FORK_AT", "FORK_OF", "ForkConnector", "ForkWatch", "fork_recording", "fork_wrapper"]
