"""``[run] instructions`` / ``--instructions TEXT|@FILE``: the user's domain guidance is appended to the
environment's system prompt (never replacing it) and recorded with the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host.models.scripted import ScriptedConnector
from rlm_host.testing.engine import isolated_runner

GUIDE = "Amounts are in Swiss francs; the fiscal year starts in April."


@pytest.mark.parametrize("environment, replies", [
    ("pure_rlm", ["```repl\nprint(len(context))\n```", "FINAL(1)"]),
    ("generic", ['{"action": "final", "answer": "1"}']),
])
def test_the_guidance_follows_the_system_prompt_and_is_recorded(tmp_path, monkeypatch, environment, replies):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path, sandbox="process", plugins="rlm-env-generic")  # generic is a plugin
    root = ScriptedConnector.from_responses(replies)
    result = runner.run_task("What is the total?", context="a ledger", environment=environment, instructions=GUIDE,
                             connectors={"root": root, "sub": root})
    assert result.completed, result.error
    system = root.calls[0][0]["content"]
    assert system.index("Domain instructions from the user") > 100 and system.rstrip().endswith(GUIDE)
    start = json.loads(Path(result.trajectory_path).read_text().splitlines()[0])
    assert start["data"]["settings"]["instructions"] == GUIDE


def test_without_guidance_the_prompt_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```", "FINAL(1)"])
    isolated_runner(tmp_path, sandbox="process").run_task("q", context="c", connectors={"root": root, "sub": root})
    assert "Domain instructions" not in root.calls[0][0]["content"]


def test_the_cli_reads_a_file_and_a_missing_file_is_bad_input(rlm_cli, rlm_script, rlm_isolated):
    (rlm_isolated.work / "guide.md").write_text(GUIDE)
    (rlm_isolated.work / "notes.txt").write_text("a ledger")
    model = rlm_script(["```repl\nprint(1)\n```", "FINAL(1)"])
    ok = rlm_cli("run", "q", "--context", "notes.txt", "--model", model, "--sandbox", "process", "--json",
                 "--instructions", "@guide.md")
    assert ok.code == 0, ok.err
    start = json.loads(Path(json.loads(ok.out)["trajectory_path"]).read_text().splitlines()[0])
    assert start["data"]["settings"]["instructions"] == GUIDE
    bad = rlm_cli("run", "q", "--context", "notes.txt", "--model", model, "--instructions", "@missing.md")
    assert bad.code == 2 and "cannot read missing.md" in bad.err and "Traceback" not in bad.err
