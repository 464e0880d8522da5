"""Runs, params, step metrics, status, the trajectory artifact and benchmark nesting, read back from a real
MLflow server through ``MlflowClient``."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mlflow_server import client, quiet_home, record_tree, runs_by_rlm_id, server, with_labels  # noqa: F401

from rlm_sink_mlflow.settings import MlflowSinkSettings
from rlm_sink_mlflow.sink import MlflowSink

pytestmark = pytest.mark.slow


def feed(url: str, experiment: str, events, home: Path, **options) -> MlflowSink:
    sink = MlflowSink(MlflowSinkSettings(tracking_uri=url, experiment=experiment, **options), home)
    for event in events:
        sink.handle(event)
    sink.close()
    assert sink._off is None, sink._off
    return sink


def test_every_run_of_a_tree_is_a_nested_mlflow_run_with_params_metrics_and_status(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    experiment = f"runs-{uuid.uuid4().hex[:8]}"
    feed(server.url, experiment, events, tmp_path)
    mlflow = client(server)
    runs = runs_by_rlm_id(mlflow, experiment)
    child_id = next(e.run_id for e in events if e.depth == 1)
    assert set(runs) == {result.run_id, child_id}
    root, child = runs[result.run_id], runs[child_id]
    assert child.data.tags["mlflow.parentRunId"] == root.info.run_id and "mlflow.parentRunId" not in root.data.tags
    assert root.data.tags["rlm.root_run_id"] == child.data.tags["rlm.root_run_id"] == result.run_id
    assert root.data.params["task"] == "What is the answer?" and root.data.params["environment"] == "pure_rlm"
    assert root.data.params["sandbox"] == "process" and root.data.params["max_depth"] == "1"
    assert child.data.params["task"] == "Summarise the context" and child.data.params["depth"] == "1"
    for run_id, run in runs.items():
        final = next(e for e in events if e.type == "final" and e.run_id == run_id).data
        steps = [e.data for e in events if e.type == "step" and e.run_id == run_id]
        assert run.info.status == "FINISHED" and run.data.tags["rlm.termination_reason"] == "final"
        assert run.data.metrics["steps"] == final["steps"] == len(steps)
        assert run.data.metrics["total_reward"] == pytest.approx(final["total_reward"])
        assert run.data.metrics["completed"] == 1.0 and run.data.metrics["duration_s"] > 0
        history = mlflow.get_metric_history(run.info.run_id, "cumulative_reward")
        expected = [(s["step"], pytest.approx(s["cumulative_reward"])) for s in steps]
        assert [(m.step, m.value) for m in history] == expected
        tokens = mlflow.get_metric_history(run.info.run_id, "input_tokens")
        assert [m.value for m in tokens] == [s["usage"]["root"]["input_tokens"] for s in steps]
    usage = result.usage
    assert root.data.metrics["total_tokens"] == usage.root.total_tokens + usage.sub.total_tokens
    assert root.info.end_time > root.info.start_time > 0


def test_the_root_run_carries_the_trajectory_as_an_artifact(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    experiment = f"artifact-{uuid.uuid4().hex[:8]}"
    feed(server.url, experiment, events, tmp_path)
    mlflow = client(server)
    runs = runs_by_rlm_id(mlflow, experiment)
    name = Path(result.trajectory_path).name
    listed = mlflow.list_artifacts(runs[result.run_id].info.run_id, "trajectory")
    assert [a.path for a in listed] == [f"trajectory/{name}"]
    local = mlflow.download_artifacts(runs[result.run_id].info.run_id, f"trajectory/{name}", str(tmp_path))
    assert Path(local).read_text() == Path(result.trajectory_path).read_text()
    child = next(r for k, r in runs.items() if k != result.run_id)
    assert mlflow.list_artifacts(child.info.run_id) == []


def test_without_trajectory_and_tracing_only_runs_are_recorded(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    experiment = f"bare-{uuid.uuid4().hex[:8]}"
    feed(server.url, experiment, events, tmp_path, log_trajectory=False, tracing=False)
    mlflow = client(server)
    runs = runs_by_rlm_id(mlflow, experiment)
    assert mlflow.list_artifacts(runs[result.run_id].info.run_id) == []
    assert mlflow.search_traces(locations=[runs[result.run_id].info.experiment_id]) == []


def test_benchmark_cases_nest_under_one_run_per_benchmark_id_across_sinks(server, tmp_path):
    experiment = f"bench-{uuid.uuid4().hex[:8]}"
    roots = []
    for case in ("case_1", "case_2"):  # two sinks: as two processes of one benchmark would
        result, events = record_tree(tmp_path / case)
        labelled = with_labels(events, {"benchmark_id": "bench_x", "preset": "smoke", "case": case})
        feed(server.url, experiment, labelled, tmp_path)
        roots.append(result.run_id)
    runs = runs_by_rlm_id(client(server), experiment)
    bench = runs.pop("benchmark:bench_x")
    assert bench.info.run_name == "benchmark bench_x" and bench.data.tags["preset"] == "smoke"
    assert bench.info.status == "FINISHED"
    for case, root in zip(("case_1", "case_2"), roots):
        assert runs[root].data.tags["mlflow.parentRunId"] == bench.info.run_id
        assert runs[root].data.tags["case"] == case and runs[root].data.tags["benchmark_id"] == "bench_x"
        assert runs[root].info.run_name.startswith(case)
    assert len(runs) == 4  # two roots, two children (under their roots)


def test_a_failed_run_is_failed_and_a_tree_cut_short_is_killed_on_close(server, tmp_path):
    result, events = record_tree(tmp_path / "rec")
    failed = [e.model_copy(update={"data": {**e.data, "termination_reason": "error", "completed": False,
                                            "error": "SandboxError: it broke"}})
              if e.type == "final" and e.depth == 0 else e for e in events]
    experiment = f"fail-{uuid.uuid4().hex[:8]}"
    feed(server.url, experiment, failed, tmp_path)
    runs = runs_by_rlm_id(client(server), experiment)
    assert runs[result.run_id].info.status == "FAILED"
    assert runs[result.run_id].data.tags["rlm.error"] == "SandboxError: it broke"
    cut = f"cut-{uuid.uuid4().hex[:8]}"
    feed(server.url, cut, [e for e in events if e.type != "final"], tmp_path)
    runs = runs_by_rlm_id(client(server), cut)
    assert {r.info.status for r in runs.values()} == {"KILLED"}
    traces = client(server).search_traces(locations=[runs[result.run_id].info.experiment_id])
    assert len(traces) == 1 and traces[0].info.state.value == "ERROR"
