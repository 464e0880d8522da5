"""Root replies in the shape dspy.RLM's ChatAdapter reads, for the scripted model of these tests."""

from __future__ import annotations

import json
from pathlib import Path

CONTEXT = "line one\nline two\nthe code word is PAPAYA\n"
TASK = "What is the code word in the context?"
#: The sub-model's answer to the llm_query of ``LOOK`` (anchored: root prompts never start with it).
SUB_RULES = ({"match": "^Which code word", "text": "PAPAYA"},)


def reply(code: str, reasoning: str = "Next step.") -> str:
    """One root reply: dspy.RLM's action fields, the code in a python fence."""
    return (f"[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## code ## ]]\n```python\n{code}\n```\n\n"
            "[[ ## completed ## ]]")


#: Step 1: inspect `context` in the sandbox and ask the sub-model (Monty's Python subset: no generators).
LOOK = reply(
    "print(len(context), 'characters')\n"
    "hits = [line for line in context.splitlines() if 'code word' in line]\n"
    "print(hits)\n"
    "word = llm_query('Which code word does this line give? ' + hits[0])\n"
    "print('sub-model:', word)",
    "Look at the context first, then let the sub-model read the line.",
)
#: Step 2: SUBMIT the variable (dspy's positional form).
SUBMIT_WORD = reply("SUBMIT(word)", "The sub-model found the word: submit it.")
#: A step that works and does not finish.
WORKING = reply("print(len(context))", "Keep exploring.")


def steps_of(trajectory_path: str) -> list[dict]:
    """The ``step`` events' data of a trajectory file, in order."""
    lines = Path(trajectory_path).read_text().splitlines()
    return [event["data"] for event in map(json.loads, lines) if event["type"] == "step"]
