"""``rlm runs compare A B``: the first step where two runs diverge and the deltas of their outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAME = "```repl\nprint(len(context))\n```"


def _run(rlm_cli, rlm_script, replies) -> dict:
    Path("notes.txt").write_text("the quick brown fox")
    result = rlm_cli("run", "How long?", "--context", "notes.txt", "--model", rlm_script(replies), "--sandbox",
                     "process", "--json")
    return json.loads(result.out)


def test_the_first_divergent_step_and_the_deltas(rlm_cli, rlm_script, rlm_isolated):
    a = _run(rlm_cli, rlm_script, [SAME, "```repl\nprint(context.split())\n```", "FINAL(4)"])
    b = _run(rlm_cli, rlm_script, [SAME, "```repl\nprint(1/0)\n```", "FINAL(4)"])
    shown = rlm_cli("runs", "compare", a["run_id"], b["run_id"])
    assert shown.code == 0, shown.err
    assert "diverge at step 2 (code, success); 1 steps alike before" in shown.out
    assert "A: run_code [ok]  print(context.split())" in shown.out and "B: run_code [error]  print(1/0)" in shown.out
    data = json.loads(rlm_cli("runs", "compare", a["run_id"], b["run_id"], "--json").out)
    assert data["identical_steps"] == 1 and data["divergence"]["differs_in"] == ["code", "success"]
    tokens_a = a["usage"]["root"]["input_tokens"] + a["usage"]["root"]["output_tokens"]
    assert data["deltas"]["tokens"]["a"] == tokens_a
    efficiency = a["total_reward"] * 1000 / tokens_a
    assert data["deltas"]["efficiency"]["a"] == pytest.approx(efficiency)
    assert data["deltas"]["reward"]["delta"] == pytest.approx(b["total_reward"] - a["total_reward"], abs=1e-6)


def test_identical_runs_and_a_run_that_ended_first(rlm_cli, rlm_script, rlm_isolated):
    a = _run(rlm_cli, rlm_script, [SAME, "FINAL(19)"])
    b = _run(rlm_cli, rlm_script, [SAME, "FINAL(19)"])
    c = _run(rlm_cli, rlm_script, [SAME, SAME, "FINAL(19)"])
    assert "the same 2 steps from start to end" in rlm_cli("runs", "compare", a["run_id"], b["run_id"]).out
    data = json.loads(rlm_cli("runs", "compare", a["run_id"], c["run_id"], "--json").out)
    assert data["divergence"]["step"] == 2 and data["divergence"]["differs_in"] == ["action", "code"]
    missing = rlm_cli("runs", "compare", a["run_id"], "run_nope")
    assert missing.code == 2 and "Traceback" not in missing.err
