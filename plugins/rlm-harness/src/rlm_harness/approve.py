"""``--approve ask`` for ``rlm harness run``: each write, command or MCP tool that is not read-only is shown on the
controlling terminal (``/dev/tty``) and waits for y/N, so a run whose stdin is a pipe can still be approved by the
person watching it. What is shown comes from the model or an MCP server: control characters are replaced, never
sent (an escape sequence could redraw the screen to hide the real action)."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

#: Characters of one detail shown.
DETAIL_CHARS = 800


class TtyApprover:
    """An approver (``RLM(approver=…)``) asking on a terminal: True for y/yes, False otherwise."""

    def __init__(self, tty: str = "/dev/tty") -> None:
        self.tty = tty

    @classmethod
    def if_attended(cls) -> Optional["TtyApprover"]:
        """An approver when a person watches (stderr is a terminal), else None: an unattended ``ask`` is refused
        by the host rather than waiting for an answer nobody will type."""
        return cls() if sys.stderr.isatty() else None

    def __call__(self, request: Any) -> bool:
        lines = [f"\n? {request.tool} wants to {request.kind}: {request.summary}"]
        lines += [f"    {key}: {_clip(str(value))}" for key, value in request.details.items()]
        prompt = printable("\n".join(lines)) + "\n  allow? [y/N] "
        fd = os.open(self.tty, os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, prompt.encode("utf-8", "replace"))
            answer = _read_line(fd)
        finally:
            os.close(fd)
        if not answer:
            raise EOFError("the terminal closed")
        return answer.strip().lower() in ("y", "yes")


def printable(text: str) -> str:
    """``text`` with control characters (but newlines and tabs) shown as ``?`` and ESC as ``␛``."""
    return "".join(c if c in "\n\t" or (c.isprintable() and c not in "\x7f\x9b") else "␛" if c == "\x1b" else "?"
                   for c in text)  # fmt: skip


def _clip(text: str) -> str:
    return text if len(text) <= DETAIL_CHARS else f"{text[:DETAIL_CHARS]}… ({len(text) - DETAIL_CHARS:,} more)"


def _read_line(fd: int, limit: int = 1024) -> str:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = os.read(fd, 1)
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace")
