"""The content an MLflow run shows a person: its description, from the task and answer the content policy let out.

A run's params hold only the start of its task (``task_chars``), and the answer is known only at the end, when
params can no longer be added; so the task and the answer go into the run's description (the
``mlflow.note.content`` tag, Markdown, the top of the run page in MLflow's UI), and the start of the answer into
the ``rlm.answer`` tag (a column of the runs table). All of it only when content capture is on.
"""

from __future__ import annotations

import re
from typing import Any, Optional

NOTE_CHARS = 7900  # MLflow's limit on a tag value is 8000
INLINE_CHARS = 300  # a task or answer up to this long, on one line, is shown inline


def _shown(text: str) -> str:
    """``text`` as Markdown shows it as written: a short single line inline (Markdown's marks escaped), anything
    else in a code fence longer than any run of backticks inside it."""
    if "\n" not in text and len(text) <= INLINE_CHARS:
        return " " + re.sub(r"([\\`*_\[\]<>#|~!])", r"\\\1", text)
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"\n\n{fence}text\n{text}\n{fence}"


def run_note(task: Optional[str], answer: Optional[str], error: Any = None) -> Optional[str]:
    """The run's description: its task and its answer (or its error), each cut to share ``NOTE_CHARS``."""
    if task is None and answer is None:
        return None
    share = NOTE_CHARS // 2 - 40
    parts = []
    if task is not None:
        parts.append("**Task:**" + _shown(_cut(task, share)))
    if answer is not None:
        parts.append("**Answer:**" + _shown(_cut(answer, share)))
    elif error:
        parts.append("**No answer:** " + _cut(str(error), 500).replace("\n", " "))
    return "\n\n".join(parts)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 30] + f"… [{len(text) - limit + 30} more characters]"
