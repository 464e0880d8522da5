"""``rlm tui`` in a real pseudo-terminal (tmux, 80×24): it draws, answers keys, opens a run and quits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.browser import system_program  # tests/support
from tui_support import sample_home

from test_tui_app import A

RLM = str(Path(sys.executable).with_name("rlm"))


@pytest.mark.slow
def test_in_a_real_terminal(tmp_path):
    tmux = system_program("tmux", required_by="RLM_REQUIRE_TMUX")
    work = tmp_path / "work"
    sample_home(work / ".rlm")
    session = f"rlmtui{os.getpid()}"
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "TMUX"))}, "HOME": str(tmp_path),
           "TERM": "xterm-256color"}
    socket = ["-S", str(tmp_path / "tmux.sock")]  # a server of its own, not the user's
    tmux_cmd = [tmux, *socket]
    subprocess.run([*tmux_cmd, "new-session", "-d", "-s", session, "-x", "80", "-y", "24", "-c", str(work),
                    f"{RLM} tui"], check=True, env=env)
    try:
        screen = wait_screen_cmd(tmux_cmd, session, "F1 help")
        assert "3 of 3 runs" in screen and "final" in screen
        assert all(len(line) <= 80 for line in screen.splitlines())
        subprocess.run([*tmux_cmd, "send-keys", "-t", session, "/"], check=True)
        time.sleep(0.5)  # the command line takes the focus
        subprocess.run([*tmux_cmd, "send-keys", "-t", session, "-l", f"/rlm replay {A}"], check=True)
        subprocess.run([*tmux_cmd, "send-keys", "-t", session, "Enter"], check=True)
        screen = wait_screen_cmd(tmux_cmd, session, "Step 1")
        assert A in screen and "x = 1/0" in screen
        subprocess.run([*tmux_cmd, "send-keys", "-t", session, "e"], check=True)  # the next error step
        screen = wait_screen_cmd(tmux_cmd, session, "ZeroDivisionError")
        assert "Step 2" in screen
        subprocess.run([*tmux_cmd, "send-keys", "-t", session, "C-q"], check=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and subprocess.run([*tmux_cmd, "has-session", "-t", session],
                                                             capture_output=True).returncode == 0:
            time.sleep(0.2)
        assert subprocess.run([*tmux_cmd, "has-session", "-t", session], capture_output=True).returncode != 0
    finally:
        subprocess.run([*tmux_cmd, "kill-server"], capture_output=True)


def wait_screen_cmd(tmux_cmd: list[str], session: str, text: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run([*tmux_cmd, "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never showed; the screen:\n{screen}")


@pytest.mark.slow
@pytest.mark.parametrize("redirect", ["> out.txt 2>&1", "< /dev/null 2> out.txt"])
def test_without_a_terminal_it_exits_2_and_points_at_web(tmp_path, redirect):
    """Issue 47: started from a terminal with its output (or input) redirected, ``rlm tui`` drew into the file and
    never exited; it now says it needs a terminal, names ``--web``, and exits 2 at once."""
    tmux = system_program("tmux", required_by="RLM_REQUIRE_TMUX")
    work = tmp_path / "work"
    work.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "TMUX"))}, "HOME": str(tmp_path),
           "TERM": "xterm-256color"}
    tmux_cmd = [tmux, "-S", str(tmp_path / "tmux.sock")]
    subprocess.run([*tmux_cmd, "new-session", "-d", "-s", "tui", "-x", "80", "-y", "24", "-c", str(work),
                    f"timeout 30 {RLM} tui {redirect}; echo $? > rc.txt"], check=True, env=env)
    try:
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not (work / "rc.txt").is_file():
            time.sleep(0.2)
        assert (work / "rc.txt").read_text().strip() == "2"
        said = (work / "out.txt").read_text()
        assert "rlm tui needs a terminal" in said and "rlm tui --web" in said and "\x1b" not in said, said
    finally:
        subprocess.run([*tmux_cmd, "kill-server"], capture_output=True)
