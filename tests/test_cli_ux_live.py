"""The live view of ``rlm run``: a spinner with the step's time and the tokens so far on a terminal,
nothing extra when piped; ``↳ rlm_query`` with its child run's model and tokens."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = ["rlm-sandbox-monty"]
SLOW = {"responses": ["```repl\nimport time\ntime.sleep(1.2)\nprint('ok')\n```", "FINAL(done)"]}
ARGS = ["run", "q", "--model", "scripted:slow.json", "--sandbox", "process"]


@pytest.fixture
def work(isolated_env) -> Path:
    work = Path(isolated_env["WORK"])
    (work / "slow.json").write_text(json.dumps(SLOW))
    return work


def test_piped_output_has_no_spinner(rlm, work):
    result = rlm(*ARGS, plugins=PLUGINS)
    assert result.returncode == 0 and result.stdout == "done\n", result.stderr
    assert "tokens so far" not in result.stderr and "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "── step 1 · run_code" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_a_terminal_shows_a_spinner_with_time_and_tokens(work, isolated_env, plugin_site):
    import pty

    from support import RLM_SCRIPT

    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(RLM_PLUGINS=",".join(PLUGINS), TERM="xterm", PYTHONPATH=str(plugin_site))
    env.pop("NO_COLOR", None)
    leader, follower = pty.openpty()
    process = subprocess.Popen([RLM_SCRIPT, *ARGS], cwd=work, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    assert process.stdout.read() == b"done\n"  # the answer alone on stdout
    screen = b"".join(chunks).decode("utf-8", "replace")
    assert "step 1 · 0." in screen and "tokens so far" in screen  # the step's elapsed time, while the code runs
    assert "✓ final after 2 steps" in screen


def test_rlm_query_shows_the_child_runs_model_and_tokens(rlm, work):
    (work / "rq.json").write_text(json.dumps({"responses": [
        "```repl\nr = rlm_query('child task: say hi')\nprint(r)\n```", "FINAL(child says hi)", "FINAL_VAR(r)"]}))
    result = rlm("run", "q", "--model", "scripted:rq.json", "--max-depth", "2", plugins=PLUGINS)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stderr.splitlines() if "↳ rlm_query" in line)
    assert "scripted:rq.json" in line and " 0 tokens" not in line and "tokens" in line


@pytest.mark.parametrize("sandbox", ["process", "monty"])
def test_a_failed_step_shows_why_it_failed(rlm, work, sandbox):
    """The ✗ line showed the traceback's last line (``x = 1/0``, or ``~^~`` in process), not the reason."""
    (work / "fail.json").write_text(json.dumps(["```repl\nx = 1/0\n```", "FINAL(done)"]))
    result = rlm("run", "q", "--model", "scripted:fail.json", "--sandbox", sandbox, plugins=PLUGINS)
    assert result.returncode == 0, result.stderr
    failed = [line.strip() for line in result.stderr.splitlines() if "✗" in line]
    assert failed == ["✗ ZeroDivisionError: division by zero"], result.stderr


def test_a_framework_step_shows_its_code_and_its_tools_result(rlm, work, plugin_site):
    """The live view showed a framework's tool_call / tool_result steps as bare step lines: no code, no
    output (a framework records them as the step's code and the observation's output, not as REPL blocks)."""
    (work / "fw.json").write_text(json.dumps(["print(6 * 7)", "ANSWER: 42"]))
    tests = str(Path(__file__).resolve().parent)
    result = rlm("run", "q", "--framework", "echo", "--model", "scripted:fw.json", "--sandbox", "process",
                 plugins=[], env={"RLM_PLUGIN_MODULES": "support.echo_framework",
                                  "PYTHONPATH": f"{plugin_site}:{tests}"})
    assert result.returncode == 0 and result.stdout == "42\n", result.stderr
    lines = [line.strip() for line in result.stderr.splitlines()]
    step = lines.index(next(line for line in lines if line.startswith("── step 1 · run_code")))
    assert lines[step + 1:step + 3] == ["│ print(6 * 7)", "→ 42"], result.stderr
