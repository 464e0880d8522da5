"""Errors of sandbox code as the model reads them: "ExcType: message", then the frames of its own code.

The text follows the process runtime's: the summary line first, then ``Traceback (most recent call last):``
and at most ``MAX_TRACEBACK_FRAMES`` frames, each cell named ``<cell N>``.
"""

from __future__ import annotations

import re
from typing import Any

MAX_TRACEBACK_FRAMES = 8
_INPUT_NAME = re.compile(r"^<python-input-(\d+)>$")


def missing_variable(name: str) -> str:
    """The message of FINAL_VAR for a name that is not a variable (as the process runtime words it)."""
    return f"FINAL_VAR: no variable named {name!r}"


def is_stop(error: Any, stop_message: str) -> bool:
    """Whether a Monty error is the SystemExit that FINAL / FINAL_VAR / SUBMIT raise to end a step."""
    try:
        return error.display("type-msg") == f"SystemExit: {stop_message}"
    except Exception:
        return False


def is_call_limit(text: str) -> bool:
    """Whether an error is Monty's limit on host calls per session (its "suspension limit")."""
    return text.startswith("RuntimeError: suspension limit")


def _cell(filename: str) -> str:
    match = _INPUT_NAME.match(filename or "")
    return f"<cell {match.group(1)}>" if match else filename


def format_error(error: Any) -> str:
    """'ExcType: message' (with a hint for MemoryError), then the traceback of user code."""
    try:
        summary = error.display("type-msg")
    except Exception:
        summary = str(error) or type(error).__name__
    if summary.startswith("MemoryError"):
        summary += " (the sandbox ran out of memory: work on smaller pieces)"
    elif is_call_limit(summary):
        summary += (" (this step reached the session's limit of host-function calls, [sandbox.monty] "
                    "max_host_calls, and was stopped; the count starts again and your variables are kept)")
    try:
        frames = list(error.traceback())
    except Exception:
        frames = []
    if not frames:
        return summary
    lines = [summary]
    if not summary.startswith("SyntaxError"):
        lines.append("Traceback (most recent call last):")
    for frame in frames[-MAX_TRACEBACK_FRAMES:]:
        where = f'  File "{_cell(frame.filename)}", line {frame.line}'
        if frame.function_name:
            where += f", in {frame.function_name}"
        lines.append(where)
        if frame.source_line:
            lines.append("    " + frame.source_line.strip())
    return "\n".join(lines)
