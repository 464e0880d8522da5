"""The ``local`` sink keeps the sink protocol, writes run and step lines for every run of a tree, and is fed by
every run whose ``[run] sinks`` is not set."""

import json
from pathlib import Path

import pytest

from rlm_host import HostServices, RunEvent, RunResult, RunUsage, StepRecord, Usage
from rlm_host.testing import SinkContract
from rlm_sink_local.sink import LocalJSONLSink, LocalSinkSettings, create

PLUGIN = "rlm-sink-local"
T0 = 1_795_000_000.0


class TestLocalSink(SinkContract):
    sink = "local"
    distribution = PLUGIN

    def check_output(self, events, home: Path) -> None:
        finals = {e.run_id: e for e in events if e.type == "final"}
        runs = [json.loads(line) for line in (home / "observability" / "runs.jsonl").read_text().splitlines()]
        recorded = {r["run_id"]: r for r in runs}
        for run_id, final in finals.items():
            line = recorded[run_id]
            assert line["completed"] == final.data["completed"] and line["steps"] == final.data["steps"]
            assert line["depth"] == final.depth and line["total_reward"] == final.data["total_reward"]
            steps = (home / "observability" / "steps" / f"{run_id}.jsonl").read_text().splitlines()
            assert len(steps) == final.data["steps"]


def _step(n: int, action: str, *, reward: float, total: float, observation: dict) -> dict:
    usage = RunUsage(root=Usage(calls=1, input_tokens=100, output_tokens=20))
    return StepRecord(step=n, action=action, observation=observation, reward=reward, cumulative_reward=total,
                      usage=usage, duration_s=1.25).model_dump(mode="json")


def _result(run_id: str, *, steps: int, reward: float, parent=None, depth=0) -> dict:
    usage = RunUsage(root=Usage(calls=steps, input_tokens=300, output_tokens=60, cost=0.003))
    usage.sub.add(50, 10, 0.0005)
    return RunResult(run_id=run_id, parent_run_id=parent, depth=depth, task="count", environment="pure_rlm",
                     model="openai:test", sandbox="process", completed=True, final_response="42", steps=steps,
                     total_reward=reward, usage=usage, cost=0.0035, duration_s=4.5,
                     termination_reason="final").model_dump(mode="json")


def _run_tree(root: str) -> list[RunEvent]:
    """A root run of three steps (the second an error) with a child run finishing inside its first step."""
    child = f"{root}_c1"
    ok = {"blocks": [{"code": "FINAL('42')", "stdout": ""}], "success": True}
    failed = {"blocks": [{"code": "print(x)", "error": "NameError: name 'x' is not defined"}], "success": False}
    events = [
        ("run_start", root, {"task": "count"}, None, 0),
        ("run_start", child, {"task": "summarise"}, root, 1),
        ("step", child, _step(1, "final", reward=1.0, total=1.0, observation=ok), root, 1),
        ("final", child, _result(child, steps=1, reward=1.0, parent=root, depth=1), root, 1),
        ("step", root, _step(1, "run_code", reward=0.1, total=0.1, observation=ok), None, 0),
        ("step", root, _step(2, "run_code", reward=-0.1, total=0.0, observation=failed), None, 0),
        ("step", root, _step(3, "final", reward=1.0, total=1.0, observation=ok), None, 0),
        ("final", root, _result(root, steps=3, reward=1.0), None, 0),
    ]
    return [RunEvent(type=type_, run_id=run_id, root_run_id=root, parent_run_id=parent, depth=depth, ts=T0 + i,
                     data=data) for i, (type_, run_id, data, parent, depth) in enumerate(events)]


def test_writes_a_run_line_per_run_and_a_step_line_per_step(tmp_path):
    home = tmp_path / "home"
    sink = create(None, HostServices(home=home))
    for event in _run_tree("run_s"):
        sink.handle(event)
    sink.close()
    runs = [json.loads(line) for line in (home / "observability" / "runs.jsonl").read_text().splitlines()]
    assert [(r["run_id"], r["parent_run_id"], r["depth"]) for r in runs] == [("run_s_c1", "run_s", 1),
                                                                             ("run_s", None, 0)]
    root = runs[1]
    assert root["completed"] and root["termination_reason"] == "final" and root["steps"] == 3
    assert root["tokens"]["root"] == {"calls": 3, "input": 300, "output": 60, "total": 360}
    assert root["tokens"]["sub"]["total"] == 60 and root["tokens"]["total"] == 420
    assert root["cost"] == pytest.approx(0.0035) and root["duration"] == 4.5 and root["task"] == "count"
    steps = [json.loads(line) for line in (home / "observability" / "steps" / "run_s.jsonl").read_text().splitlines()]
    assert [(s["step"], s["action"], s["success"]) for s in steps] == [(1, "run_code", True), (2, "run_code", False),
                                                                        (3, "final", True)]
    assert [s["cumulative_reward"] for s in steps] == pytest.approx([0.1, 0.0, 1.0])
    assert set(steps[0]) == {"timestamp", "run_id", "step", "action", "reward", "cumulative_reward", "success"}
    assert (home / "observability" / "steps" / "run_s_c1.jsonl").is_file()


def test_settings_choose_the_folder_and_refuse_unknown_keys(tmp_path):
    sink = LocalJSONLSink(LocalSinkSettings(directory=tmp_path / "obs"), tmp_path / "home")
    assert sink.runs_file == tmp_path / "obs" / "runs.jsonl"
    with pytest.raises(ValueError):
        LocalSinkSettings(directry="x")


def test_on_by_default_and_left_out_by_a_run_that_names_its_sinks(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    model = rlm_script(["FINAL(42)"])
    observed = rlm_isolated.runs / "observability" / "runs.jsonl"
    result = rlm_cli("run", "What?", "--model", model, "--sandbox", "process", "--json", plugins=PLUGIN)
    assert result.code == 0, result.err
    assert json.loads(observed.read_text())["run_id"] == json.loads(result.out)["run_id"]
    shown = rlm_cli("runs", "show", json.loads(result.out)["run_id"], plugins=f"{PLUGIN},rlm-runs")
    assert "sinks: local" in shown.out
    monkeypatch.setenv("RLM_RUN__SINKS", "[]")
    result = rlm_cli("run", "What?", "--model", rlm_script(["FINAL(42)"]), "--sandbox", "process", "-q", plugins=PLUGIN)
    assert result.code == 0, result.err
    assert len(observed.read_text().splitlines()) == 1, "[run] sinks = [] feeds no sink"
    result = rlm_cli("run", "What?", "--model", rlm_script(["FINAL(42)"]), "--sandbox", "process", "-q",
                     "--sink", "local", plugins=PLUGIN)
    assert result.code == 0, result.err
    assert len(observed.read_text().splitlines()) == 2
