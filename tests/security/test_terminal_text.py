"""Text from a run never drives the terminal: what a model writes (code, output, answers, errors) and what a task
holds may carry ESC, C1 (CSI U+009B, OSC U+009D), BEL, DEL or other control characters that would move the
cursor, retitle the window or hide a line. Each command's printer shows them (``terminal_safe``), through the
real ``rlm`` command: the live view and messages on stderr, ``rlm replay``, and the answer when stdout is a
terminal (a pseudo-terminal here); into a pipe the answer is the product, printed as it is."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

RLM = str(Path(sys.executable).with_name("rlm"))
CONTROLS = "\x9b2J\x9d0;title\x07\x1b[31m\x7f\x85\r"


def raw_controls(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and not c.isprintable()]


def env_for(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    return {**env, "RLM_HOME": str(home), "RLM_PLUGINS": "rlm-runs", "HOME": str(home.parent)}  # rlm replay


def hostile_script(folder: Path) -> str:
    """A model whose code prints control characters, fails with them in its error, then answers with them."""
    path = folder / "script.json"
    code = f"```repl\nprint({CONTROLS!r})\nraise ValueError({CONTROLS!r})\n```"
    path.write_text(json.dumps({"responses": [code, f"FINAL(answer {CONTROLS})"]}))
    return f"scripted:{path}"


def test_the_live_view_and_replay_show_control_characters_never_send_them(tmp_path):
    home = tmp_path / "home"
    done = subprocess.run([RLM, "run", f"task {CONTROLS}", "--model", hostile_script(tmp_path), "--sandbox",
                           "process"], capture_output=True, text=True, env=env_for(home), cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "step 1" in done.stderr and "ValueError" in done.stderr
    assert not raw_controls(done.stderr), repr(done.stderr)
    assert done.stdout.startswith("answer \x9b2J"), "into a pipe, the answer is printed as it is"
    replayed = subprocess.run([RLM, "replay", "latest", "--no-interactive"], capture_output=True, text=True,
                              env=env_for(home), cwd=tmp_path, timeout=60)
    assert replayed.returncode == 0 and "ValueError" in replayed.stdout, replayed.stderr
    assert not raw_controls(replayed.stdout), repr(replayed.stdout)


def test_the_answer_on_a_terminal_shows_control_characters(tmp_path):
    home = tmp_path / "home"
    controller, terminal = pty.openpty()
    try:
        process = subprocess.Popen([RLM, "run", "task", "--model", hostile_script(tmp_path), "--sandbox", "process",
                                    "--quiet"], stdout=terminal, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                   env=env_for(home), cwd=tmp_path)
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(60) == 0
    finally:
        os.close(controller)
    text = shown.decode("utf-8", "replace").replace("\r\n", "\n")  # the terminal's own newline translation
    assert text.startswith("answer ") and not raw_controls(text), repr(text)


def test_run_json_escapes_del_and_c1_so_the_same_json_cannot_drive_a_terminal(tmp_path):
    """``rlm run --json`` is read by programs and by people: JSON escapes C0 itself, and DEL and C1 are written as
    ``\\uXXXX`` too (the same value to a parser)."""
    home = tmp_path / "home"
    done = subprocess.run([RLM, "run", "task", "--model", hostile_script(tmp_path), "--sandbox", "process", "--json",
                           "-q"], capture_output=True, text=True, env=env_for(home), cwd=tmp_path,
                          timeout=120)
    assert raw_controls(done.stdout) == [], done.stdout[:400]
    assert json.loads(done.stdout)["final_response"] == f"answer {CONTROLS}".strip()  # the same value, unescaped
