"""Branching proposals (``[run] branch_width``): at each root step, several candidate replies, each tried in a
throwaway copy of the REPL and scored with the run's rewards; the best is kept as the step.

The first candidate is the step's ordinary reply; the others are more calls of the root model with the same
messages (each one counts in the budget like any call). Each is tried with the environment's ``trial`` (a copy of
its REPL state and history: nothing the candidate does reaches the run unless it is kept), scored by the reward
the environment gives it (scaled as the step's would be), and recorded as a ``branch`` event. The best — highest
score, the earliest on a tie — becomes the step: its copy of the REPL is kept, the others are dropped.
"""

from __future__ import annotations

from typing import Any

from rlm_host.models.protocol import Completion
from rlm_host.results import ActionResult

#: The most candidates per step: each is a model call and a copy of the REPL.
MAX_BRANCH_WIDTH = 8


def best_of(environment: Any, first: Completion, width: int, more: Any, step: int, scope: Any,
            scale: Any) -> tuple[Completion, ActionResult]:
    """The kept candidate of ``width`` (``first``, then ``more()`` for each other) and its result, every candidate
    recorded as a ``branch`` event; ``scale(reward)`` is the run's reward scaling."""
    tried: list[tuple[Completion, Any]] = []
    try:
        for index in range(width):
            completion = first if index == 0 else more()
            tried.append((completion, environment.trial(completion, step)))
        scores = [scale(trial.result.reward) for _, trial in tried]
        best = max(range(len(tried)), key=lambda i: (scores[i], -i))
    except BaseException:
        for _, trial in tried:
            trial.discard()
        raise
    for index, (completion, trial) in enumerate(tried):
        scope.emit("branch", _record(step, index + 1, completion, trial.result, scores[index], index == best))
        if index != best:
            trial.discard()
    tried[best][1].commit()
    return tried[best][0], tried[best][1].result


def _record(step: int, candidate: int, completion: Completion, result: ActionResult, score: float,
            chosen: bool) -> dict[str, Any]:
    blocks = result.observation.get("blocks") or []
    output = "".join(str(b.get("stdout") or "") for b in blocks if isinstance(b, dict))
    error = next((str(b["error"]) for b in blocks if isinstance(b, dict) and b.get("error")), None)
    return {"step": step, "candidate": candidate, "reply": completion.text, "action": result.action,
            "code": result.code, "output": output, "error": error or result.observation.get("error"),
            "score": round(score, 6), "chosen": chosen, "tokens": completion.input_tokens + completion.output_tokens}
