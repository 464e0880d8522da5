"""``--approve ask`` through a real pseudo-terminal: ``rlm harness run`` in a child process whose controlling terminal
is a pty; the test plays the person, answering y to the write and n to the command; the refusal is a step."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import subprocess
import termios
import time

from harness_support import RLM, call, final


def _read_until(fd: int, marker: bytes, seen: bytearray, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while marker not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"no {marker!r} on the terminal; it shows: {seen.decode(errors='replace')[-2000:]}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    text = seen.decode(errors="replace")
    del seen[:]
    return text


def test_ask_on_a_terminal_yes_then_no(rlm_isolated, rlm_script):
    project = rlm_isolated.work / "project"
    project.mkdir()
    model = rlm_script([call("write_file", path="hello.txt", content="hi\x1b[2J"),
                        call("run_command", command="touch made.txt"), final("asked")])
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(HOME=str(rlm_isolated.home), RLM_PLUGINS="rlm-harness", TERM="dumb")

    def controlling_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    child = subprocess.Popen([RLM, "harness", "run", "Ask me.", "--workdir", str(project), "--model", model,
                              "--sandbox", "process", "--approve", "ask", "--json"],
                             stdin=follower, stdout=subprocess.PIPE, stderr=follower, cwd=rlm_isolated.work, env=env,
                             start_new_session=True, preexec_fn=controlling_terminal)
    os.close(follower)
    seen = bytearray()
    try:
        first = _read_until(leader, b"allow? [y/N]", seen)
        assert "write_file wants to write: write_file hello.txt" in first and "\x1b[2J" not in first
        os.write(leader, b"y\n")
        second = _read_until(leader, b"allow? [y/N]", seen)
        assert "run_command wants to command: touch made.txt" in second
        os.write(leader, b"n\n")
        out, _ = child.communicate(timeout=60)
    finally:
        child.kill()
        os.close(leader)
    assert child.returncode == 0
    run = json.loads(out)
    events = [json.loads(line) for line in open(run["trajectory_path"])]
    steps = [e["data"] for e in events if e["type"] == "step"]
    assert steps[0]["observation"]["success"] and (project / "hello.txt").read_text() == "hi\x1b[2J"
    assert steps[1]["observation"]["refused"] and "refused by the user" in steps[1]["observation"]["error"]
    assert not (project / "made.txt").exists() and run["final_response"] == "asked"
