"""Attacks through what a model asks for: exports where links point or beside the inputs, ids that inject lines,
patterns that backtrack, reads that outlast the run — through ``rlm run --env traces`` and ``rlm traces``."""

import json
import os
import time

import pytest

from rlm_env_traces import store as store_module
from rlm_env_traces.generate import generate
from rlm_env_traces.reader import TraceLimitError
from rlm_env_traces.store import TraceStore
from rlm_host import InputError

PLUGIN = "rlm-env-traces"


def run_steps(rlm_cli, rlm_script, path, actions, *options):
    model = rlm_script([json.dumps(a) for a in actions])
    result = rlm_cli("run", "Find failures.", "--env", "traces", "--context", str(path), "--model", model, "--json",
                     "--max-steps", str(len(actions)), *options, plugins=PLUGIN)
    run = json.loads(result.out)
    events = [json.loads(line) for line in open(run["trajectory_path"])]
    return run, [e["data"] for e in events if e["type"] == "step"]


def test_an_export_never_writes_through_a_link_or_over_an_input(rlm_cli, rlm_script, rlm_isolated):
    data = rlm_isolated.work / "trace-evidence"
    data.mkdir()
    path = data / "traces.jsonl"  # the input has the export's own file name, in the output folder
    generate(path, traces=6)
    original = path.read_bytes()
    victim = rlm_isolated.home / ".bashrc"
    victim.write_text("# mine\n")
    (data / "planted").mkdir()
    os.symlink(victim, data / "planted" / "summary.md")
    os.symlink(rlm_isolated.home, data / "linked")
    run, steps = run_steps(rlm_cli, rlm_script, path, [
        {"action": "export_evidence_corpus", "directory": "."},
        {"action": "export_evidence_corpus", "directory": "planted"},
        {"action": "export_evidence_corpus", "directory": "linked"},
        {"action": "export_evidence_corpus", "directory": "linked/sub"},
        {"action": "export_evidence_corpus", "has_errors": True},
        {"action": "final", "final_response": "done"},
    ])
    assert path.read_bytes() == original and victim.read_text() == "# mine\n"
    assert not (rlm_isolated.home / "sub").exists() and not (rlm_isolated.home / "summary.md").exists()
    for refused in steps[:4]:
        assert "error" in refused["observation"] and refused["reward"] < 0, refused
    assert "not empty" in steps[0]["observation"]["error"] and "not empty" in steps[1]["observation"]["error"]
    made = steps[4]["observation"]["result"]
    assert steps[4]["reward"] == 0.75 and made["traces"] == 2
    folder = data / os.path.basename(made["directory"])
    assert sorted(os.listdir(folder)) == ["summary.md", "traces.jsonl"] and folder.parent == data


def test_the_cli_exports_only_to_a_new_or_empty_folder(rlm_cli, rlm_isolated):
    path = rlm_isolated.work / "traces.jsonl"
    generate(path, traces=4)
    original = path.read_bytes()
    refused = rlm_cli("traces", "export", str(path), ".", plugins=PLUGIN)
    assert refused.code == 2 and "not empty" in refused.err and path.read_bytes() == original
    (rlm_isolated.work / "empty").mkdir()
    assert rlm_cli("traces", "export", str(path), "empty", plugins=PLUGIN).code == 0
    os.symlink(rlm_isolated.work / "elsewhere", rlm_isolated.work / "dangling")
    link = rlm_cli("traces", "export", str(path), "dangling", plugins=PLUGIN)
    assert link.code == 2 and "link" in link.err and not (rlm_isolated.work / "elsewhere").exists()


def test_ids_from_the_file_are_encoded_before_they_become_lines(tmp_path):
    evil = "t1\n| injected | row |\n../../../etc/x`"
    path = tmp_path / "in" / "t.jsonl"
    path.parent.mkdir()
    spans = [{"trace_id": evil, "span_id": "s\n1", "name": "tool | call\nname",
              "status": {"code": "ERROR", "message": "boom\n## Injected heading"},
              "resource": {"service.name": "svc\n- item"}}]
    path.write_text("".join(json.dumps(s) + "\n" for s in spans))
    store = TraceStore.load(path)
    result = store.export_evidence_corpus(tmp_path / "out")
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == ["summary.md", "traces.jsonl"] and result["traces"] == 1
    assert [json.loads(line)["trace_id"] for line in (out / "traces.jsonl").read_text().splitlines()] == [evil]
    summary = (out / "summary.md").read_text()
    assert not any(line.startswith(("| injected", "## Injected", "- item", "../")) for line in summary.splitlines())
    rows = [line for line in summary.splitlines() if line.startswith("| `")]
    assert len(rows) == 1 and rows[0].count(" | ") == 6, rows
    assert "t1\\n\\| injected \\| row \\|\\n../../../etc/x\\u0060" in summary
    assert not (tmp_path / "etc").exists()


def test_a_backtracking_regex_ends_at_once_and_a_bad_one_is_an_observation(rlm_cli, rlm_script, rlm_isolated):
    path = rlm_isolated.work / "t.jsonl"
    span = {"trace_id": "t1", "span_id": "s1", "name": "chat", "attributes": {"gen_ai.prompt": "a" * 200_000}}
    path.write_text(json.dumps(span) + "\n")
    started = time.monotonic()
    run, steps = run_steps(rlm_cli, rlm_script, path, [
        {"action": "search_trace", "trace_id": "t1", "pattern": "(a+)+b", "regex": True},
        {"action": "search_trace", "trace_id": "t1", "pattern": "(a*)*$", "regex": True},
        {"action": "search_trace", "trace_id": "t1", "pattern": "(a)\\1", "regex": True},
        {"action": "search_trace", "trace_id": "t1", "pattern": "x" * 5000, "regex": True},
        {"action": "final", "final_response": "done"},
    ], "--timeout", "20")
    assert time.monotonic() - started < 5
    assert steps[0]["observation"]["result"]["match_count"] == 0 and steps[0]["reward"] == 0.65
    assert steps[1]["observation"]["result"]["match_count"] == 1
    assert "unsupported regex" in steps[2]["observation"]["error"] and steps[2]["reward"] < 0
    assert "at most 2,000" in steps[3]["observation"]["error"]
    assert run["completed"]


def test_a_search_stops_at_the_runs_deadline_with_an_error_observation(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    """A slow matcher (standing in for any slow search) is cut by the run's wall-clock limit, not its own."""
    path = rlm_isolated.work / "t.jsonl"
    path.write_text("".join(json.dumps({"trace_id": "t1", "span_id": f"s{i}"}) + "\n" for i in range(400)))

    def slow(pattern, regex):
        return lambda text, seconds: time.sleep(0.02)

    monkeypatch.setattr(store_module, "compile_pattern", slow)
    started = time.monotonic()
    run, steps = run_steps(rlm_cli, rlm_script, path, [
        {"action": "search_trace", "trace_id": "t1", "pattern": "x"},
        {"action": "final", "final_response": "done"},
    ], "--timeout", "2")
    assert time.monotonic() - started < 4, "400 spans at 20 ms would take 8 s"
    error = steps[0]["observation"]["error"]
    assert "time limit" in error and "spans searched" in error and steps[0]["reward"] < 0


def test_every_read_has_a_deadline_and_every_answer_a_cap(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"trace_id": "t1", "span_id": f"s{i}", "name": "n" * 5000,
                                        "attributes": {f"k{j}": "v" * 20_000 for j in range(40)}}) + "\n"
                            for i in range(30)))
    store = TraceStore.load(path, time_left=lambda: 0.0)
    for call in (lambda: store.view_trace("t1"), lambda: store.view_spans("t1", ["s1"]),
                 lambda: store.search_trace("t1", "x")):
        with pytest.raises(TraceLimitError):
            call()
    store.time_left = None
    view = store.view_trace("t1")
    assert view["oversized"] and view["span_count"] == 30 and len(json.dumps(view)) < 50_000
    spans = store.view_spans("t1", [f"s{i}" for i in range(30)])
    assert len(json.dumps(spans)) <= store_module.VIEW_SPANS_CHARS + 10_000 and spans["spans"]
    assert len(spans["spans"]) + len(spans.get("omitted_span_ids", [])) == 30
    with pytest.raises(InputError, match="at most 200"):
        store.view_spans("t1", [str(i) for i in range(201)])
    assert store.query_traces(limit=10**9)["limit"] == store_module.MAX_QUERY_LIMIT


def test_a_regex_whose_dfa_thrashes_on_a_huge_span_is_cut_at_the_deadline(tmp_path, monkeypatch):
    """RE2 is linear, not fast: this pattern would run RE2's NFA for minutes over 4 MB. It runs in a bounded child
    killed at the search's deadline; a search of the same size that finishes gives the same answer as in-process."""
    import random

    from rlm_env_traces import matcher

    rng = random.Random(1)
    path = tmp_path / "t.jsonl"
    blob = "".join(rng.choice("ab") for _ in range(4 << 20))
    span = {"trace_id": "t1", "span_id": "s1", "attributes": {"blob": blob}}
    path.write_text(json.dumps(span) + "\n" + json.dumps({"trace_id": "t1", "span_id": "s2", "name": "needle"}) + "\n")
    store = TraceStore.load(path)
    started = time.monotonic()
    with pytest.raises(TraceLimitError, match="time limit"):
        store.search_trace("t1", "(?:a|b)*a(?:a|b){999}c", regex=True, timeout=1.0)
    assert time.monotonic() - started < 3
    found = store.search_trace("t1", "need+le|ab{5}a", regex=True)
    monkeypatch.setattr(matcher, "INLINE_WORK", 10**15)
    assert store.search_trace("t1", "need+le|ab{5}a", regex=True) == found and found["match_count"] == 2
