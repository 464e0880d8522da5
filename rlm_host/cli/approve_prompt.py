"""``--approve ask`` on a terminal: each action that changes things is shown and waits for y/N on the controlling
terminal (``/dev/tty``), so a run whose stdin is a pipe can still be approved by the person watching it."""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from rlm_host.approvals import ApprovalRequest
from rlm_host.text import terminal_safe

#: A request longer than this is refused unseen: nobody reads a megabyte in a terminal prompt before typing y.
MAX_SHOWN_CHARS = 100_000


class TerminalApprover:
    """An ``Approver`` for the command line; pauses the live view's spinner while it asks."""

    def __init__(self, live_view: Optional[Any] = None, tty: str = "/dev/tty") -> None:
        self.live_view, self.tty = live_view, tty

    @classmethod
    def if_attended(cls, live_view: Optional[Any] = None) -> Optional["TerminalApprover"]:
        """An approver when a person watches this command (stderr is a terminal), else None: an unattended run's
        ``ask`` is refused rather than waiting for an answer nobody will type."""
        return cls(live_view) if sys.stderr.isatty() else None

    def __call__(self, request: ApprovalRequest) -> bool:
        """Show the whole request (every detail uncut, each line numbered, so blank padding cannot push what is
        approved out of sight) and read y/N; a request too long to show is refused without asking."""
        shown = _whole_request(request)
        if len(shown) > MAX_SHOWN_CHARS:
            return False
        if (spinner := getattr(self.live_view, "spinner", None)) is not None:
            spinner.stop()
        try:  # unbuffered: the line typed is read byte by byte, up to its end (at most 1 KB)
            with open(self.tty, "r+b", buffering=0,
                      opener=lambda path, _: os.open(path, os.O_RDWR | os.O_NOCTTY)) as tty:
                tty.write((terminal_safe(shown) + "\n  allow? [y/N] ").encode("utf-8", "replace"))
                answer = tty.readline(1024).decode("utf-8", "replace")
        finally:
            if spinner is not None:
                spinner.start()
        if not answer:
            raise EOFError("the terminal closed")
        return answer.strip().lower() in ("y", "yes")


def _whole_request(request: ApprovalRequest) -> str:
    """The request as the person sees it: a header, then each detail whole, a multi-line one numbered with its line
    count."""
    from rlm_host.redact import redact

    lines = [f"\n? {request.tool} wants to {request.kind}: {redact(request.summary)}"]
    for key, value in request.details.items():
        text = redact(str(value))
        rows = text.split("\n")
        if len(rows) == 1:
            lines.append(f"    {key}: {text}")
            continue
        lines.append(f"    {key} ({len(rows)} lines, all shown):")
        lines += [f"    {number:>4} | {row}" for number, row in enumerate(rows, 1)]
    return "\n".join(lines)
