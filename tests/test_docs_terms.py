"""Terms as a user meets them: ``efficiency`` is defined where ``rlm runs compare`` prints it, and ``rlm mcp
serve`` says on stderr what it serves and how to stop it (stdout stays the stdio protocol channel)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RLM = str(Path(sys.executable).with_name("rlm"))
ROOT = Path(__file__).resolve().parents[1]


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("RLM_")}, **extra}


def test_runs_compare_defines_efficiency(rlm_isolated, rlm_script):
    ids = []
    for replies in (["FINAL(4)"], ["```repl\nprint(1)\n```", "FINAL(4)"]):
        done = subprocess.run([RLM, "run", "q", "--model", rlm_script(replies), "--sandbox", "process", "--json"],
                              env=_env(RLM_PLUGINS=""), capture_output=True, text=True, timeout=60)
        ids.append(json.loads(done.stdout)["run_id"])
    done = subprocess.run([RLM, "runs", "compare", *ids], env=_env(RLM_PLUGINS="rlm-runs"), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "\nefficiency " in done.stdout
    assert "efficiency: reward per 1,000 tokens (total reward × 1000 / total tokens)" in done.stdout
    readme = (ROOT / "README.md").read_text()
    assert "efficiency (reward per 1,000 tokens" in readme


def _banner(proc: subprocess.Popen, until: str, seconds: float = 30) -> list[str]:
    lines, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if until in line:
            break
    return lines


def test_mcp_serve_says_what_it_serves_and_how_to_stop(rlm_isolated):
    docs = rlm_isolated.work / "docs"
    docs.mkdir()
    for transport in ("stdio", "http"):
        args = [RLM, "mcp", "serve", "--root", "docs", "--model", "scripted:s.json", "--sandbox", "process"]
        args += ["--transport", "http", "--port", "0", "--token", "t"] if transport == "http" else []
        proc = subprocess.Popen(args, env=_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            lines = _banner(proc, "stop with Ctrl-C")
            text = "\n".join(lines)
            said = "over stdio" if transport == "stdio" else "serving streamable HTTP at http://127.0.0.1:0/mcp"
            assert said in text
            assert f"roots {docs}" in text and "model scripted:s.json" in text and "sandbox process" in text
            assert lines and lines[-1].startswith("rlm mcp: stop with Ctrl-C")
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
            assert out == ""  # stdout is the protocol channel: nothing but MCP ever goes there
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
