"""The trace_analysis environment: the protocol contract, and runs end to end through ``rlm run --env traces``."""

import json

import pytest

from rlm_env_traces.generate import SYSTEMIC_MESSAGE, generate
from rlm_host.testing import EnvironmentContract

PLUGIN = "rlm-env-traces"


class TestTraceAnalysis(EnvironmentContract):
    """The whole environment protocol suite (contexts there are strings, not trace files)."""

    environment = "trace_analysis"
    distribution = PLUGIN
    final_reply = '{"action": "final", "final_response": "42"}'
    final_answer = "42"
    working_reply = '{"action": "get_dataset_overview"}'


# Only this plugin is loaded: no sandbox that is a security boundary exists, and none is needed (runs_code=False).
def run_json(rlm_cli, rlm_script, path, actions, task="Find systemic failures."):
    model = rlm_script([json.dumps(a) for a in actions])
    result = rlm_cli("run", task, "--env", "traces", "--context", str(path), "--model", model, "--json",
                     "--max-steps", str(len(actions)), plugins=PLUGIN)
    assert result.code == 0, result.out + result.err
    return json.loads(result.out)


def observations(run):
    events = [json.loads(line) for line in open(run["trajectory_path"])]
    return [e["data"] for e in events if e["type"] == "step"]


@pytest.mark.parametrize(("name", "fmt"), [("flat.jsonl", "flat"), ("otlp.jsonl", "otlp"), ("mixed.jsonl", "mixed"),
                                           ("mixed.jsonl.gz", "mixed")])
def test_a_run_finds_the_systemic_failure_in_every_format(rlm_cli, rlm_script, rlm_isolated, name, fmt):
    path = rlm_isolated.work / name
    info = generate(path, traces=24, fmt=fmt, malformed=2)
    failing = info["error_trace_ids"][0]
    run = run_json(rlm_cli, rlm_script, path, [
        {"action": "count_traces", "has_errors": True},
        {"action": "query_traces", "has_errors": True, "agent": "researcher", "limit": 2},
        {"action": "search_trace", "trace_id": failing, "pattern": "timeout"},
        {"action": "final", "final_response": f"web_search times out, e.g. {failing}"},
    ])
    assert run["completed"] and run["final_response"].endswith(failing) and run["environment"] == "trace_analysis"
    assert run["sandbox"] == "none", "an environment that runs no code starts no sandbox"
    steps = observations(run)
    assert [s["action"] for s in steps] == ["count_traces", "query_traces", "search_trace", "final"]
    assert [s["reward"] for s in steps] == [0.35, 0.5, 0.65, 1.0]
    count, query, search = (s["observation"]["result"] for s in steps[:3])
    assert count["count"] == len(info["error_trace_ids"]) == 5
    assert query["total"] == 4 and len(query["traces"]) == 2, "5 error traces, one of them the support agent's"
    assert all(t["agents"] == ["researcher"] and t["trace_id"] in info["error_trace_ids"] for t in query["traces"])
    assert search["match_count"] == 1 and SYSTEMIC_MESSAGE in search["matches"][0]["snippet"]


def test_the_prompt_carries_the_live_overview_and_the_context_stays_unread(rlm_cli, rlm_script, rlm_isolated):
    path = rlm_isolated.work / "t.jsonl"
    generate(path, traces=10, malformed=1)
    final = json.dumps({"action": "final", "final_response": "seen"})
    model = rlm_script([], rules=[{"match": '"traces": 10, "spans": 70, "error_traces": 3, "malformed_lines": 1',
                                   "text": final}])  # answers only a prompt showing the overview
    result = rlm_cli("run", "Overview?", "--env", "traces", "--context", str(path), "--model", model, "--json",
                     plugins=PLUGIN)
    run = json.loads(result.out)
    assert run["final_response"] == "seen", result.err
    assert f"{path} ({path.stat().st_size:,} bytes, unread)" in result.err
    start = json.loads(open(run["trajectory_path"]).readline())["data"]
    assert start["context"] == {"type": "path", "path": str(path), "total_chars": 0, "bytes": path.stat().st_size,
                                "files": [str(path.resolve())]}  # the recorded files: rlm runs fork reads them again
    assert (rlm_isolated.work / "t.jsonl.rlm-index").is_file()


def test_view_spans_export_and_set_trace_path_stay_in_their_folders(rlm_cli, rlm_script, rlm_isolated):
    path = rlm_isolated.work / "data" / "t.jsonl"
    path.parent.mkdir()
    info = generate(path, traces=12)
    other = path.parent / "other.jsonl"
    generate(other, traces=3, seed=1)
    failing = info["error_trace_ids"][0]
    run = run_json(rlm_cli, rlm_script, path, [
        {"action": "view_trace", "trace_id": failing},
        {"action": "export_evidence_corpus", "directory": "errors", "has_errors": True},
        {"action": "export_evidence_corpus", "directory": "/tmp/elsewhere"},
        {"action": "set_trace_path", "path": "../../outside.jsonl"},
        {"action": "set_trace_path", "path": "other.jsonl"},
        {"action": "view_trace", "trace_id": "nope"},
        {"action": "dance"},
        {"action": "final", "final_response": "ok"},
    ])
    steps = observations(run)
    spans = steps[0]["observation"]["result"]["spans"]
    assert len(spans) == 7 and {s["trace_id"] for s in spans} == {failing}
    exported = rlm_isolated.work / "trace-evidence" / "errors"
    assert steps[1]["reward"] == 0.75 and (exported / "traces.jsonl").is_file()
    summary = (exported / "summary.md").read_text()
    assert SYSTEMIC_MESSAGE in summary and failing in summary
    for refused in steps[2:4]:
        assert "outside the allowed folders" in refused["observation"]["error"] and refused["reward"] < 0
    assert steps[4]["reward"] == 0.55 and steps[4]["observation"]["result"]["traces"] == 3
    assert "no trace 'nope'" in steps[5]["observation"]["error"] and steps[5]["reward"] < 0
    assert steps[6]["action"] == "invalid_action"


def test_the_task_can_name_the_trace_file(rlm_cli, rlm_script, rlm_isolated):
    generate(rlm_isolated.work / "t.jsonl", traces=6)
    model = rlm_script([json.dumps({"action": "count_traces"}), json.dumps({"action": "final", "final_response": "6"})])
    result = rlm_cli("run", "How many traces? trace=t.jsonl", "--env", "trace_analysis", "--model", model, "--json",
                     plugins=PLUGIN)
    run = json.loads(result.out)
    assert observations(run)[0]["observation"]["result"]["count"] == 6


def test_an_empty_trace_file_is_a_clear_error(rlm_cli, rlm_script, rlm_isolated):
    (rlm_isolated.work / "empty.jsonl").write_text("")
    result = rlm_cli("run", "x", "--env", "traces", "--context", "empty.jsonl", "--model", rlm_script(["{}"]),
                     plugins=PLUGIN)
    assert result.code != 0 and "trace file is empty" in result.err


def test_without_a_trace_a_home_folder_is_refused_as_where_files_are_opened(rlm_cli, rlm_script, rlm_isolated,
                                                                             monkeypatch):
    """Issue 47: with no trace named, the model opens files with set_trace_path from the working folder; started in
    the home folder, that was the user's whole home, unguarded. It is refused before the run (exit 2) unless
    --allow-any-workdir; a trace file named in a home folder gives access to that file alone."""
    home = rlm_isolated.home
    (home / "notes.jsonl").write_text('{"secret": "hunter2"}\n')
    monkeypatch.chdir(home)
    peek = [{"action": "set_trace_path", "path": "notes.jsonl"}, {"action": "final", "final_response": "done"}]
    model = rlm_script([json.dumps(a) for a in peek])
    args = ("run", "What is in my files?", "--env", "traces", "--model", model, "--json", "--max-steps", "2")
    refused = rlm_cli(*args, plugins=PLUGIN)
    assert refused.code == 2 and "refusing to let the model open trace files in" in refused.err, refused.err
    allowed = rlm_cli(*args, "--allow-any-workdir", plugins=PLUGIN)
    assert allowed.code == 0 and json.loads(allowed.out)["final_response"] == "done", allowed.err
    generate(home / "run.jsonl", traces=3, seed=1)
    other = [{"action": "set_trace_path", "path": "notes.jsonl"}, {"action": "final", "final_response": "done"}]
    named = rlm_cli("run", "q", "--env", "traces", "--context", str(home / "run.jsonl"), "--model",
                    rlm_script([json.dumps(a) for a in other]), "--json", "--max-steps", "2",
                    plugins=PLUGIN)
    assert named.code == 0, named.err
    steps = [json.loads(line)["data"] for line in open(json.loads(named.out)["trajectory_path"])
             if json.loads(line)["type"] == "step"]
    assert "outside the allowed folders" in json.dumps(steps[0]["observation"]), steps[0]
