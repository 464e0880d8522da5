"""The answer a framework run gives when its steps ran out: one ``purpose="synthesis"`` call, as a native run makes.

The framework's own transcript is its own; the host knows the task and every step it reported (action, code,
observation), so the synthesis prompt is built from those, newest last, within a character budget.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Sequence

from rlm_host.environments.kit import truncate
from rlm_host.results import StepRecord

#: Characters of the step log a synthesis prompt carries (the newest steps are kept).
STEP_LOG_CHARS = 12_000
OBSERVATION_CHARS = 1_500

SYNTHESIS_PROMPT = (
    "You have used all your steps. From the task and the work below, give your best final answer to the task now, "
    "as plain text, without code and without calling a tool."
)


def synthesis_messages(task: str, steps: Sequence[StepRecord]) -> list[dict[str, str]]:
    """The one request that asks for the best answer from what the run did."""
    entries: list[str] = []
    for record in steps:
        observation = truncate(json.dumps(record.observation, ensure_ascii=False, default=str), OBSERVATION_CHARS)
        code = f"\ncode:\n{truncate(record.code, OBSERVATION_CHARS)}" if record.code else ""
        entries.append(f"step {record.step} ({record.action}){code}\nresult: {observation}")
    log: list[str] = []
    size = 0
    for entry in reversed(entries):  # the newest steps matter most
        if size + len(entry) > STEP_LOG_CHARS:
            log.append(f"({len(entries) - len(log)} earlier steps left out)")
            break
        log.append(entry)
        size += len(entry)
    work = "\n\n".join(reversed(log)) or "(no step was recorded)"
    return [{"role": "system", "content": SYNTHESIS_PROMPT},
            {"role": "user", "content": f"Task: {task}\n\nWork so far:\n{work}\n\nYour final answer:"}]


def synthesize(root: Any, task: str, steps: Sequence[StepRecord]) -> Optional[str]:
    """The root model's best answer (None when it gave none; a ``FINAL(x)`` line is read as ``x``, and a
    ``FINAL_VAR(name)`` names nothing here: ``synthesized_answer``); errors are the caller's to record."""
    from rlm_host.environments.repl_format import synthesized_answer  # the REPL's reading of a FINAL line

    completion = root.complete(synthesis_messages(task, steps), purpose="synthesis")
    return synthesized_answer(completion.text)
