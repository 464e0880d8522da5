"""End to end: ``rlm run`` with the scripted provider and ``RLM_RUN__SINKS='["mlflow"]'`` records the run tree on
a real MLflow server, and its ``--json`` stdout stays pure JSON (MLflow prints no "View run" line there)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from mlflow_server import SUB_RULES, TREE_REPLIES, client, quiet_environ, quiet_home, runs_by_rlm_id  # noqa: F401
from mlflow_server import server  # noqa: F401

from rlm_host.sdk.observability import trace_id_for

pytestmark = pytest.mark.slow
RLM = str(Path(sys.executable).with_name("rlm"))


def rlm_run(folder: Path, url: str, experiment: str, **environ: str) -> tuple[dict, str]:
    """``rlm run --json`` of the scripted tree with the mlflow sink: (the RunResult, stderr)."""
    (folder / "root.json").write_text(json.dumps(TREE_REPLIES))
    (folder / "sub.json").write_text(json.dumps({"rules": SUB_RULES}))
    (folder / "context.txt").write_text("a context of a few words")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "MLFLOW_"))}
    env |= quiet_environ(folder) | {"RLM_PLUGINS": "rlm-sink-mlflow", "RLM_RUN__SINKS": '["mlflow"]',
                                    "RLM_SINK__MLFLOW__TRACKING_URI": url, "RLM_SINK__MLFLOW__EXPERIMENT": experiment,
                                    **environ}
    done = subprocess.run([RLM, "run", "What is the answer?", "--context", "context.txt", "--model",
                           "scripted:root.json", "--sub-model", "scripted:sub.json", "--sandbox", "process",
                           "--max-depth", "1", "--json", "-q"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_rlm_run_records_the_tree_on_the_server(server, tmp_path):
    experiment = f"cli-{uuid.uuid4().hex[:8]}"
    result, stderr = rlm_run(tmp_path, server.url, experiment)
    assert result["completed"] and result["final_response"] == "42"
    mlflow = client(server)
    runs = runs_by_rlm_id(mlflow, experiment)
    assert len(runs) == 2 and runs[result["run_id"]].info.status == "FINISHED"
    assert runs[result["run_id"]].data.params["model"].startswith("scripted:")
    trace = mlflow.get_trace(f"tr-{trace_id_for(result['run_id'])}")
    assert trace.info.trace_metadata["mlflow.sourceRun"] == runs[result["run_id"]].info.run_id
    assert len([s for s in trace.data.spans if s.span_type == "AGENT"]) == 2
    assert "disabled" not in stderr and "mlflow sink" not in stderr, stderr  # no warning
    chats = [s for s in trace.data.spans if s.span_type == "CHAT_MODEL"]
    assert len(chats) == 5 and all(s.inputs["messages"] and s.outputs for s in chats)  # live model calls: content
    assert "FINAL(42)" in {s.outputs for s in chats} and trace.info.response_preview == '"42"'


def test_capture_content_false_keeps_the_content_off_the_server(server, tmp_path):
    experiment = f"cli-quiet-{uuid.uuid4().hex[:8]}"
    result, _ = rlm_run(tmp_path, server.url, experiment, RLM_SINK__MLFLOW__CAPTURE_CONTENT="false")
    mlflow = client(server)
    trace = mlflow.get_trace(f"tr-{trace_id_for(result['run_id'])}")
    assert len(trace.data.spans) == 9 and all(s.inputs is None and s.outputs is None for s in trace.data.spans)
    stored = trace.to_json() + repr([r.data for r in runs_by_rlm_id(mlflow, experiment).values()])
    for text in ("What is the answer?", "Summarise", "Classify", "Recursive Language Model", "FINAL", "prose"):
        assert text not in stored, text


def test_benchmark_labels_of_separate_rlm_runs_nest_them_under_one_benchmark_run(server, tmp_path):
    experiment = f"cli-bench-{uuid.uuid4().hex[:8]}"
    roots = []
    for case in ("case_a", "case_b"):
        (tmp_path / case).mkdir()
        labels = json.dumps({"benchmark_id": "bench_cli", "preset": "demo", "case": case})
        roots.append(rlm_run(tmp_path / case, server.url, experiment, RLM_RUN__LABELS=labels)[0]["run_id"])
    runs = runs_by_rlm_id(client(server), experiment)
    bench = runs.pop("benchmark:bench_cli")
    assert [runs[root].data.tags["mlflow.parentRunId"] for root in roots] == [bench.info.run_id] * 2
    assert [runs[root].data.tags["case"] for root in roots] == ["case_a", "case_b"] and len(runs) == 4
