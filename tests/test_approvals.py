"""Approvals (``[run] approve``, ``approval_rules``): what goes ahead, what is asked, what is refused, and the
terminal prompt through a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import threading

import pytest

from rlm_host.approvals import ApprovalRequest, Approvals
from rlm_host.cli.approve_prompt import TerminalApprover

WRITE = ApprovalRequest("write_file", "write", "write_file src/app.py", {"content": "print(1)"})
READ = ApprovalRequest("read_file", "read", "read_file src/app.py")
COMMAND = ApprovalRequest("run_command", "command", "pytest -q")


def test_modes_rules_and_nobody_to_ask():
    assert Approvals("auto").check(WRITE) is None
    read_only = Approvals("read-only")
    assert read_only.check(READ) is None and "read-only run" in read_only.check(WRITE)
    assert "needs approval and nobody can be asked" in Approvals("ask").check(COMMAND)
    rules = Approvals("auto", {"run_*": "deny", "write_file": "ask"}, approver=lambda r: r.tool == "write_file")
    assert rules.check(WRITE) is None and "a rule forbids it" in rules.check(COMMAND)
    assert Approvals("read-only", {"write_*": "allow"}).check(WRITE) is None
    said_no = Approvals("ask", approver=lambda r: False).check(WRITE)
    assert said_no == "refused by the user: write_file (write_file src/app.py)"


def test_an_approver_that_cannot_ask_refuses():
    def gone(request):
        raise EOFError("the terminal closed")

    assert "asking failed (the terminal closed)" in Approvals("ask", approver=gone).check(WRITE)


@pytest.mark.parametrize("typed, allowed", [("y\n", True), ("yes\n", True), ("n\n", False), ("\n", False)])
def test_the_terminal_prompt_shows_the_action_and_reads_the_answer(typed, allowed):
    leader, follower = pty.openpty()
    try:
        approver = TerminalApprover(tty=os.ttyname(follower))
        shown = []

        def person():
            text = b""
            while b"allow? [y/N]" not in text:
                text += os.read(leader, 4096)
            shown.append(text.decode())
            os.write(leader, typed.encode())

        answering = threading.Thread(target=person)
        answering.start()
        request = ApprovalRequest("write_file", "write", "write_file a.py", {"content": "x = 1\x1b[2J"})
        assert approver(request) is allowed
        answering.join(5)
        assert "write_file wants to write: write_file a.py" in shown[0] and "content: x = 1" in shown[0]
        assert "\x1b[2J" not in shown[0]  # the model's escape sequences never reach the terminal
    finally:
        os.close(leader)
        os.close(follower)
