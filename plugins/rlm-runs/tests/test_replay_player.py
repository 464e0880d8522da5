"""``rlm replay`` and ``rlm runs list`` / ``show``: the step cursor, a saved run as text, and the commands.

The event streams are written as a ``TrajectoryWriter`` writes them: a root run with three steps (the second one an
error), a child run started by ``rlm_query`` during the first step, and final events carrying RunResult dicts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from rlm_host.sdk.embedding import Replay, RunStore
from rlm_host.testing import SAMPLE_START, RunTreeEvents, code_block, sample_run_tree, step_data, write_trajectory
from rlm_runs.player import Player
from rlm_runs.render import render_step, render_summary

T0 = SAMPLE_START
STEPS = ["```repl\nwords = context.split()\nn = len(words)\nblob = 'x' * 5000\nprint(n)\n```",
         "```repl\nprint(1/0)\n```", "FINAL_VAR('n')"]  # a run that keeps variables, with an error step


def record(home: Path, root: str, *, t0: float = T0, final: bool = True) -> Path:
    """``sample_run_tree``'s events written where a run's trajectory goes (``<home>/runs/<root>.jsonl``)."""
    events = RunTreeEvents(root, t0)
    sample_run_tree(events, final=final)
    return write_trajectory(home, events)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "rlm-home"


# --- the step cursor and the text of a saved run ------------------------------------------------------------


def test_the_player_moves_through_the_steps_and_to_errors(home):
    record(home, "run_r")
    player = Player(Replay(RunStore(home).load("run_r")))
    assert player.steps[player.cursor].number == 1 and player.prev() is None
    assert player.next().number == 2 and player.next().number == 3 and player.next() is None
    assert player.prev().number == 2 and player.goto(0).number == 1
    assert player.next_error().number == 2 and player.next_error() is None
    assert player.index_of(3) == 2 and player.index_of(9) is None


def test_interrupted_run_replays_its_finished_steps(home):
    record(home, "run_i", final=False)
    replay = Replay(RunStore(home).load("run_i"))
    assert replay.result is None and replay.root.interrupted and len(replay) == 2
    assert "interrupted after 2 steps" in render_summary(replay)


def test_an_error_step_shows_its_error():
    em = RunTreeEvents("run_e")
    em.emit("run_start", "run_e", {"task": "t"})
    em.emit("step", "run_e", step_data(1, "malformed_reply", reply=None, observation={"error": "the reply was empty"}))
    em.emit("step", "run_e", step_data(2, "error", reply="boom"))
    em.emit("step", "run_e", step_data(3, "run_code", code="1", observation={"blocks": [code_block("1", "1\n")]}))
    replay = Replay(em.events)
    assert "✗ the reply was empty" in render_step(replay.step(0))
    assert "✗ boom" in render_step(replay.step(1))


def test_render_step_and_summary(home):
    record(home, "run_t")
    replay = Replay(RunStore(home).load("run_t"))
    first = render_step(replay.step(0), total=3)
    assert "step 1/3" in first and "· run_code ·" in first and "reward +0.10" in first
    assert "120 tokens (100 in / 20 out)" in first
    assert "print(len(context))" in first and "12345" in first
    assert "↳ rlm_query" in first and "↳ llm_query" in first
    assert "child run run_t_c1 (depth 1): 1 step, final" in first and "FINAL('chunk ok')" in first
    second = render_step(replay.step(1))
    assert "✗ " in second and "NameError" in second
    summary = render_summary(replay)
    assert "run run_t" in summary and "status: final (completed)" in summary
    assert "final answer: 42" in summary and "errors at steps 2" in summary and "1 child run," in summary


# --- CLI ------------------------------------------------------------------------------------------------


@pytest.fixture
def saved(rlm_isolated, monkeypatch) -> Path:
    """Two saved runs in ``RLM_HOME``; returns that home."""
    home = rlm_isolated.work.parent / "cli-home"
    monkeypatch.setenv("RLM_HOME", str(home))
    record(home, "run_20260101_000000_000000_aaaa", t0=T0)
    record(home, "run_20260102_000000_000000_bbbb", t0=T0 + 86400)
    return home


def test_cli_runs_list(saved, rlm_cli):
    done = rlm_cli("runs", "list", "--json")
    assert done.code == 0
    runs = json.loads(done.out)
    assert [r["run_id"][-4:] for r in runs] == ["bbbb", "aaaa"] and runs[0]["termination_reason"] == "final"
    done = rlm_cli("runs", "list", "--limit", "1")
    assert done.code == 0
    out = done.out
    assert "run_20260102_000000_000000_bbbb" in out and "aaaa" not in out.split("…")[0] and "1 older runs" in out


def test_cli_runs_list_relative_home(saved, rlm_cli, monkeypatch):
    monkeypatch.setenv("RLM_HOME", "rel-home")
    record(Path("rel-home"), "run_rel")
    done = rlm_cli("runs", "list", "--json")
    assert done.code == 0
    assert [r["run_id"] for r in json.loads(done.out)] == ["run_rel"]


def test_cli_runs_show(saved, rlm_cli):
    done = rlm_cli("runs", "show", "run_20260101")
    assert done.code == 0
    out = done.out
    assert "run run_20260101_000000_000000_aaaa" in out
    assert all(f"step {n}/3" in out for n in (1, 2, 3)) and "NameError" in out
    done = rlm_cli("runs", "show", "latest", "--json")
    assert done.code == 0
    payload = json.loads(done.out)
    assert payload["result"]["final_response"] == "42" and payload["events"][0]["type"] == "run_start"


def test_cli_replay_non_interactive(saved, rlm_cli):
    done = rlm_cli("replay", "run_20260101", "--no-interactive")
    assert done.code == 0
    out = done.out
    assert all(f"step {n}/3" in out for n in (1, 2, 3))
    done = rlm_cli("replay", "latest", "--errors")  # stdin is not a terminal under pytest
    assert done.code == 0
    out = done.out
    assert "step 2/3" in out and "step 1/3" not in out and "step 3/3" not in out
    done = rlm_cli("replay", "latest", "--step", "3", "--no-interactive")
    assert done.code == 0
    out = done.out
    assert "step 3/3" in out and "step 2/3" not in out


def test_cli_unknown_run_is_one_error_line(saved, rlm_cli):
    done = rlm_cli("replay", "run_1999", "--no-interactive")
    assert done.code != 0
    err = done.err
    assert err.startswith("error: no saved run matches 'run_1999'") and "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[0]]
    done = rlm_cli("runs", "show", "run_2026")
    assert done.code == 2
    assert "matches 2 runs" in done.err
    done = rlm_cli("replay", "latest", "--step", "9")
    assert done.code != 0
    assert "has no step 9" in done.err


@pytest.mark.skipif(os.name != "posix", reason="needs a pseudo-terminal")
def test_cli_replay_interactive_through_a_pty(saved, rlm_cli, monkeypatch):
    """Drive the interactive loop with stdin on a pseudo-terminal: n, p, e, g N, an unknown key, q."""
    import pty

    leader, follower = pty.openpty()
    os.write(leader, b"n\np\ne\ng 3\nzz\nn\nq\n")
    with os.fdopen(follower, "r") as tty_in:
        monkeypatch.setattr("sys.stdin", tty_in)
        done = rlm_cli("replay", "run_20260101")
    os.close(leader)
    out = done.out
    assert done.code == 0
    shown = re.findall(r"── step (\d)/3", out)
    assert shown == ["1", "2", "1", "2", "3"]
    assert "unknown command 'zz'" in out and "at the last step" in out


def test_replay_shows_the_variables_and_filters_steps(rlm_cli, rlm_script, rlm_isolated):
    Path("notes.txt").write_text("the quick brown fox")
    run = json.loads(rlm_cli("run", "How many words?", "--context", "notes.txt", "--model", rlm_script(STEPS),
                             "--sandbox", "process", "--json").out)
    shown = rlm_cli("replay", run["run_id"], "--no-interactive")
    assert "var words (list, 4) = ['the', 'quick', 'brown', 'fox']" in shown.out
    errors = rlm_cli("replay", run["run_id"], "--errors", "--no-interactive").out
    assert "ZeroDivisionError" in errors and "words = context.split()" not in errors
    successes = rlm_cli("replay", run["run_id"], "--successes").out
    assert "words = context.split()" in successes and "ZeroDivisionError" not in successes
    both = rlm_cli("replay", run["run_id"], "--successes", "--errors")
    assert both.code == 2 and "exclude each other" in both.err
