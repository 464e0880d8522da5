"""``--branch-width N``: at each root step N candidate replies, each tried in a throwaway copy of the REPL and
scored with the run's rewards; the best is kept (its REPL state goes on, the others' is dropped), every candidate
is a ``branch`` record of the trajectory and a model call of the budget, and a width above the cap is refused
with what it would cost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPLIES = [
    "```repl\nx = 1/0\n```",                                   # step 1, candidate 1: fails
    "```repl\nx = 6 * 7\nprint('x', x)\n```",                  # candidate 2: works, kept
    "```repl\nleak = 'from a dropped copy'\nprint(leak)\n```",  # candidate 3: works, scores the same: not kept
    "```repl\nprint(leak)\n```",                               # step 2, candidate 1: leak is not there
    "FINAL_VAR(x)",                                            # candidate 2: the answer, kept
    "```repl\nprint(x)\n```",                                  # candidate 3
]


def events_of(result: dict) -> list[dict]:
    return [json.loads(line) for line in Path(result["trajectory_path"]).read_text().splitlines()]


@pytest.mark.parametrize("sandbox", ["monty", "process"])
def test_three_candidates_per_step_are_tried_and_the_best_is_kept(rlm_cli, rlm_script, sandbox):
    done = rlm_cli("run", "Compute", "--model", rlm_script(REPLIES), "--branch-width", "3", "--sandbox", sandbox,
                   "--json", plugins="rlm-sandbox-monty")
    assert done.code == 0, done.out + done.err
    result = json.loads(done.out)
    assert result["final_response"] == "42" and result["steps"] == 2
    assert result["usage"]["root"]["calls"] == 6, "every candidate is a model call of the run"
    events = events_of(result)
    branches = [e["data"] for e in events if e["type"] == "branch"]
    assert [(b["step"], b["candidate"], b["action"], b["chosen"]) for b in branches] == [
        (1, 1, "run_code", False), (1, 2, "run_code", True), (1, 3, "run_code", False),
        (2, 1, "run_code", False), (2, 2, "final", True), (2, 3, "run_code", False)]
    assert "ZeroDivisionError" in branches[0]["error"] and branches[0]["score"] == pytest.approx(-0.2)
    assert branches[2]["output"] == "from a dropped copy\n"
    assert "NameError" in branches[3]["error"], "a dropped candidate's variables are not in the kept REPL"
    steps = [e["data"] for e in events if e["type"] == "step"]
    assert steps[0]["code"].startswith("x = 6 * 7")
    assert [v["name"] for v in steps[0]["observation"]["variables"]] == ["x"]
    shown = rlm_cli("runs", "show", result["run_id"], plugins="rlm-runs")
    assert "⑂ candidate 3 · " in shown.out and "score +0.80 · kept  x = 6 * 7" in shown.out


def test_the_live_view_shows_each_candidate(rlm_cli, rlm_script):
    done = rlm_cli("run", "Compute", "--model", rlm_script(REPLIES), "--branch-width", "3", "--sandbox", "process")
    assert done.code == 0, done.err
    assert "⑂ candidate 1 · run_code · score -0.20 · ZeroDivisionError: division by zero" in done.err
    assert "⑂ candidate 2 · run_code · score +0.80 · kept" in done.err


def test_a_width_above_the_cap_or_where_nothing_can_be_copied_is_exit_2(rlm_cli, rlm_script, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    done = rlm_cli("run", "Compute", "--model", "openai:gpt-4o", "--branch-width", "20", "--max-steps", "5",
                   "--sandbox", "process")
    assert done.code == 2 and "--branch-width 20 is more than 8: up to 100 root model calls for 5 steps" in done.err
    assert "at openai:gpt-4o's price, about $" in done.err
    done = rlm_cli("run", "Compute", "--model", rlm_script(REPLIES), "--branch-width", "2", "--env", "generic",
                   "--sandbox", "process", plugins="rlm-env-generic")
    assert done.code == 2 and "the generic environment cannot try replies in a copy of its REPL" in done.err
    done = rlm_cli("run", "Compute", "--model", rlm_script(REPLIES), "--branch-width", "0")
    assert done.code == 2 and "--branch-width" in done.err
