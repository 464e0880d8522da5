"""Trajectories on disk and a saved run as a tree (``Replay``); the step cursor, the text of a run and the
``rlm runs`` / ``rlm replay`` commands are rlm-runs' (plugins/rlm-runs/tests/test_replay_player.py).

Event streams are emitted through a real ``EventBus`` into the real subscribers: a root run with three steps
(the second one an error), a child run started by ``rlm_query`` during the first step, and final events
carrying RunResult dicts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rlm_host.events import EventBus
from rlm_host.engine.scope import new_run_id
from rlm_host.trajectory import (
    AmbiguousRunError,
    CorruptTrajectoryError,
    Replay,
    RunNotFoundError,
    RunStore,
    TrajectoryWriter,

)
from rlm_host.testing.run_trees import (SAMPLE_REPLIES, SAMPLE_START, RunTreeEvents, code_block, sample_run_tree,
                                        step_data)

T0 = SAMPLE_START


def emit_run(bus: EventBus, root: str, *, t0: float = T0, final: bool = True, link_child: bool = True) -> str:
    """``sample_run_tree`` on ``bus``; returns the child run's id."""
    return sample_run_tree(RunTreeEvents(root, t0, publish=bus.emit), final=final, link_child=link_child)


def record(home: Path, root: str, **kw) -> Path:
    """Run ``emit_run`` with a TrajectoryWriter subscribed; returns the trajectory path."""
    bus = EventBus()
    with TrajectoryWriter(home, root) as writer:
        bus.subscribe("trajectory", writer)
        emit_run(bus, root, **kw)
    return writer.path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "rlm-home"


# --- writer and run ids ---------------------------------------------------------------------------------


def test_new_run_id_is_readable_sortable_and_unique():
    ids = [new_run_id() for _ in range(200)]
    assert all(re.fullmatch(r"run_\d{8}_\d{6}_\d{6}_[0-9a-f]{4}", i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert [i[:26] for i in ids] == sorted(i[:26] for i in ids)


def test_writer_flushes_every_event_while_open(home):
    bus, root = EventBus(), "run_a"
    writer = TrajectoryWriter(home, root)
    bus.subscribe("trajectory", writer)
    em = RunTreeEvents(root, publish=bus.emit)
    em.emit("run_start", root, {"task": "t"})
    assert writer.path == home / "runs" / "run_a.jsonl"
    assert len(writer.path.read_text().splitlines()) == 1  # read while the writer is still open
    em.emit("step", root, step_data(1, "run_code", code="1"))
    lines = writer.path.read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == ["run_start", "step"]
    assert json.loads(lines[1])["seq"] == 2
    RunTreeEvents("run_other", publish=bus.emit).emit("run_start", "run_other", {})  # another run tree on the same bus
    assert len(writer.path.read_text().splitlines()) == 2
    writer.close()
    writer.close()


def test_writer_keeps_values_json_cannot_hold(home):
    bus = EventBus()
    with TrajectoryWriter(home, "run_b") as writer:
        bus.subscribe("trajectory", writer)
        events = RunTreeEvents("run_b", publish=bus.emit)
        events.emit("run_start", "run_b", {"task": "t", "odd": object(), "raw": b"\xff"})
    line = json.loads(writer.path.read_text())
    assert line["data"]["task"] == "t" and "object" in line["data"]["odd"]


# --- store ----------------------------------------------------------------------------------------------


def test_list_runs_newest_first_with_summaries(home):
    record(home, "run_20260101_000000_000000_aaaa", t0=T0)
    record(home, "run_20260102_000000_000000_bbbb", t0=T0 + 86400)
    record(home, "run_20260103_000000_000000_cccc", t0=T0 + 2 * 86400, final=False)
    runs = RunStore(home).list_runs()
    assert [r.run_id[-4:] for r in runs] == ["cccc", "bbbb", "aaaa"]
    done = runs[1]
    assert done.completed and done.termination_reason == "final" and not done.interrupted
    assert (done.environment, done.model, done.steps, done.total_reward) == ("pure_rlm", "openai:test", 3, 1.0)
    assert done.tokens == 420 and done.cost == pytest.approx(0.0035) and done.duration == 4.5
    assert done.task.startswith("How many characters") and done.task.endswith("…") and len(done.task) <= 100
    assert done.started is not None and done.started.timestamp() == T0 + 86400 + 1
    interrupted = runs[0]
    assert interrupted.termination_reason == "interrupted" and not interrupted.completed
    assert interrupted.steps == 2 and interrupted.total_reward == pytest.approx(0.0)
    assert RunStore(home / "nothing-here").list_runs() == []


def test_load_by_latest_prefix_id_and_path(home):
    old = record(home, "run_20260101_000000_000000_aaaa", t0=T0)
    new = record(home, "run_20260102_000000_000000_bbbb", t0=T0 + 86400)
    store = RunStore(home)
    assert store.load("latest")[0].root_run_id == new.stem
    assert store.load("run_20260101")[0].root_run_id == old.stem
    assert store.load("20260101")[0].root_run_id == old.stem  # the run_ prefix may be left out
    assert store.load(old.stem)[-1].type == "final"
    assert len(store.load(str(old))) == len(old.read_text().splitlines())
    assert store.result("latest").trajectory_path == str(new)
    assert store.result(old.stem).final_response == "42"


def test_unknown_and_ambiguous_ids_are_clear_errors(home):
    store = RunStore(home)
    with pytest.raises(RunNotFoundError) as empty:
        store.load("latest")
    assert "no saved runs" in empty.value.message and empty.value.hint
    record(home, "run_20260101_000000_000000_aaaa")
    record(home, "run_20260101_000000_000000_bbbb")
    with pytest.raises(RunNotFoundError) as unknown:
        store.load("run_1999")
    assert "run_1999" in unknown.value.message and "rlm runs list" in unknown.value.hint
    with pytest.raises(AmbiguousRunError) as ambiguous:
        store.load("run_2026")
    assert "matches 2 runs" in ambiguous.value.message and "more characters" in ambiguous.value.hint
    with pytest.raises(RunNotFoundError):
        store.load(str(home / "missing.jsonl"))


def test_truncated_last_line_is_skipped_but_a_corrupt_middle_line_is_an_error(home, capsys):
    path = record(home, "run_x", final=False)
    count = len(path.read_text().splitlines())
    with path.open("a") as handle:
        handle.write('{"type": "step", "run_id": "run_x", "root_ru')  # killed mid-write
    store = RunStore(home)
    assert len(store.load("run_x")) == count
    assert "truncated last line" in capsys.readouterr().err
    assert store.list_runs()[0].termination_reason == "interrupted"
    assert store.result("run_x") is None
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    with pytest.raises(CorruptTrajectoryError) as corrupt:
        store.load("run_x")
    assert ":2:" in corrupt.value.message and corrupt.value.hint


# --- replay ---------------------------------------------------------------------------------------------


def test_replay_nesting_errors_and_responses(home):
    record(home, "run_r")
    replay = Replay(RunStore(home).load("run_r"))
    assert len(replay) == 3 and replay.result.final_response == "42"
    assert [s.number for s in replay.steps] == [1, 2, 3]
    assert replay.errors() == [1]
    assert replay.step(1).error == "NameError: name 'x' is not defined"
    with pytest.raises(IndexError):
        replay.step(3)
    first = replay.step(0)
    assert [c.kind for c in first.sub_calls] == ["rlm_query", "llm_query"]
    assert [c.run_id for c in first.children] == ["run_r_c1"]
    child = first.children[0]
    assert first.sub_calls[0].child is child and first.sub_calls[0].child_run_id == "run_r_c1"
    assert (child.depth, child.parent_run_id, child.result.final_response) == (1, "run_r", "chunk ok")
    assert [s.record.action for s in child.steps] == ["final"]
    assert replay.step(1).sub_calls == [] and replay.step(1).children == []
    assert [s.record.reply for s in replay.steps] == SAMPLE_REPLIES
    assert set(replay.runs) == {"run_r", "run_r_c1"}


def test_child_without_sub_call_is_nested_by_event_order(home):
    record(home, "run_o", link_child=False)
    replay = Replay(RunStore(home).load("run_o"))
    assert [c.run_id for c in replay.step(0).children] == ["run_o_c1"]


def test_errors_count_error_actions_and_observation_errors():
    bus, events = EventBus(), []
    bus.subscribe("list", events.append)
    em = RunTreeEvents("run_e", publish=bus.emit)
    em.emit("run_start", "run_e", {"task": "t"})
    em.emit("step", "run_e", step_data(1, "malformed_reply", reply=None, observation={"error": "the reply was empty"}))
    em.emit("step", "run_e", step_data(2, "error", reply="boom"))
    em.emit("step", "run_e", step_data(3, "run_code", code="1", observation={"blocks": [code_block("1", "1\n")]}))
    replay = Replay(events)
    assert replay.errors() == [0, 1] and replay.step(1).error == "boom"
    assert [s.record.reply for s in replay.steps] == [None, "boom", None]
