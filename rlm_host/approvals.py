"""Approvals: whether an action that changes something (a file write, a command, a destructive tool) may go ahead.

``[run] approve`` sets the mode — ``auto`` (every action goes ahead), ``ask`` (each such action waits for a yes or
no from the person at the front door: the terminal of ``rlm run``/``rlm harness run``, the TUI, or the program's
``approver=`` callable) or ``read-only`` (each is refused) — and ``[run] approval_rules`` maps tool names
(``fnmatch`` patterns: ``"run_command"``, ``"mcp__github__*"``) to ``allow``, ``ask`` or ``deny``, the first
match winning over the mode. Reading is never asked about. A refusal is an observation the model sees (the step
goes on), never an error. An ``ask`` with nobody to ask (no terminal, a server) is refused with a message saying
so: an unattended run cannot be approved by default.
"""

from __future__ import annotations

import fnmatch
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional

ApprovalMode = Literal["auto", "ask", "read-only"]
Rule = Literal["allow", "ask", "deny"]
#: What an action does: ``read`` is never asked about; the others are, in ``ask`` mode.
ActionKind = Literal["read", "write", "command", "tool"]


@dataclass(frozen=True)
class ApprovalRequest:
    """One action waiting for approval: its tool, kind, a one-line summary and the details a person checks."""

    tool: str
    kind: ActionKind
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    run_id: str = ""


#: The front door's way to ask a person: True (go ahead) or False (refuse).
Approver = Callable[[ApprovalRequest], bool]


@dataclass(eq=False)  # one policy object per run, compared and hashed by identity
class Approvals:
    """The run's approval policy; ``check`` is called by the environment before each action that changes things."""

    mode: ApprovalMode = "auto"
    rules: dict[str, Rule] = field(default_factory=dict)
    approver: Optional[Approver] = None
    #: one question at a time (batched tool calls ask in turn)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def rule_for(self, tool: str, kind: ActionKind) -> Rule:
        """What applies to ``tool``: its first matching rule, else the mode (a read is always allowed)."""
        for pattern, rule in self.rules.items():
            if fnmatch.fnmatchcase(tool, pattern):
                return rule
        if kind == "read" or self.mode == "auto":
            return "allow"
        return "deny" if self.mode == "read-only" else "ask"

    def check(self, request: ApprovalRequest) -> Optional[str]:
        """None when the action may go ahead; otherwise why not (the observation the model gets)."""
        rule = self.rule_for(request.tool, request.kind)
        if rule == "allow":
            return None
        if rule == "deny":
            read_only = self.mode == "read-only" and request.tool not in self.rules
            why = "read-only run" if read_only else "a rule forbids it"
            return f"refused: {request.tool} is not allowed ({why}); do something else or finish"
        if self.approver is None:
            return (f"refused: {request.tool} needs approval and nobody can be asked (no terminal); the user can "
                    "run with --approve auto, or allow this tool in [run] approval_rules")
        with self._lock:
            try:
                allowed = bool(self.approver(request))
            except (EOFError, OSError) as exc:  # the terminal went away
                return f"refused: {request.tool} needs approval and asking failed ({exc})"
        return None if allowed else f"refused by the user: {request.tool} ({request.summary})"


ALLOW_ALL = Approvals("auto")
