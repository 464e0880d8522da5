"""Two ``rlm run`` processes of one benchmark, started together, against a real MLflow server: however their
searches and creates interleave, the experiment ends with one run tagged with the benchmark id and both root
runs nested under it. A barrier (``barrier_rlm.py``) lines the two first searches up; the race is run several
times, and at least once both processes must have created a parent (else the test proved nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from mlflow_server import SUB_RULES, TREE_REPLIES, client, quiet_environ, quiet_home, server  # noqa: F401

pytestmark = pytest.mark.slow
BARRIER_RLM = str(Path(__file__).with_name("barrier_rlm.py"))
ROUNDS = 4


def start(folder: Path, barrier: Path, url: str, experiment: str, benchmark: str, case: str) -> subprocess.Popen:
    """An ``rlm run`` of the scripted tree (root + child run) with the mlflow sink and the benchmark's labels."""
    folder.mkdir(parents=True)
    (folder / "root.json").write_text(json.dumps(TREE_REPLIES))
    (folder / "sub.json").write_text(json.dumps({"rules": SUB_RULES}))
    (folder / "context.txt").write_text("a context of a few words")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "MLFLOW_"))}
    env |= quiet_environ(folder) | {"RLM_PLUGINS": "rlm-sink-mlflow", "RLM_SINK__MLFLOW__TRACKING_URI": url,
                                    "RLM_SINK__MLFLOW__EXPERIMENT": experiment,
                                    "RLM_RUN__LABELS": json.dumps({"benchmark_id": benchmark,
                                                                   "case": case})}
    command = [sys.executable, BARRIER_RLM, str(barrier), "2", "run", "What is the answer?", "--context",
               "context.txt", "--model", "scripted:root.json", "--sub-model", "scripted:sub.json", "--sandbox",
               "process", "--max-depth", "1", "--sink", "mlflow", "--json", "-q"]
    return subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_starting_one_benchmark_make_one_parent_run(server, tmp_path):
    from mlflow.entities import ViewType

    mlflow = client(server)
    experiment = f"race-{uuid.uuid4().hex[:8]}"
    both_created = 0
    for round_ in range(ROUNDS):
        benchmark = f"bench_race_{round_}"
        barrier = tmp_path / f"barrier{round_}"
        barrier.mkdir()
        processes = [start(tmp_path / f"r{round_}" / case, barrier, server.url, experiment, benchmark, case)
                     for case in ("case_a", "case_b")]
        results = []
        for process in processes:
            out, err = process.communicate(timeout=240)
            assert process.returncode == 0, err
            assert "mlflow sink" not in err, err  # no warning: the sink stayed on
            results.append(json.loads(out))
        experiment_id = mlflow.get_experiment_by_name(experiment).experiment_id
        tagged = f"tags.`rlm.benchmark_id` = '{benchmark}'"
        parents = mlflow.search_runs([experiment_id], tagged)
        assert len(parents) == 1, f"round {round_}: {len(parents)} parent runs"
        parent = parents[0]
        assert parent.info.run_name == f"benchmark {benchmark}" and parent.info.status == "FINISHED"
        for result in results:
            (root,) = mlflow.search_runs([experiment_id], f"tags.`rlm.run_id` = '{result['run_id']}'")
            assert root.data.tags["mlflow.parentRunId"] == parent.info.run_id, f"round {round_}"
        made = mlflow.search_runs([experiment_id], tagged, run_view_type=ViewType.ALL)
        assert len(made) in (1, 2) and all(r.info.lifecycle_stage == "deleted" for r in made if r is not parent
                                           and r.info.run_id != parent.info.run_id)
        both_created += len(made) == 2
    print(f"both processes created a parent in {both_created} of {ROUNDS} rounds")
    assert both_created >= 1, "the barrier never made the two processes race"
