"""Sixteen `rlm run` processes at once in one run home: every run answers, every id is unique, every trajectory is
valid and listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

RLM = [sys.executable, "-m", "rlm_host"]


@pytest.mark.slow
def test_sixteen_concurrent_runs_in_one_home(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(RLM_HOME=str(tmp_path / "home"), RLM_PLUGINS="rlm-runs")  # rlm-runs: `rlm runs list`
    processes = []
    for index in range(16):
        script = tmp_path / f"script{index}.json"
        script.write_text(json.dumps([f"```repl\nx = {index} * 2\nprint(x)\n```", "FINAL_VAR('x')"]))
        processes.append(subprocess.Popen(RLM + ["run", "q", "--model", f"scripted:{script}", "--sandbox", "process",
                                                 "--json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    results = []
    for index, process in enumerate(processes):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        results.append(json.loads(out))
        assert results[-1]["final_response"] == str(index * 2)
    ids = {r["run_id"] for r in results}
    assert len(ids) == 16
    for result in results:
        lines = open(result["trajectory_path"]).read().splitlines()
        assert [json.loads(line)["type"] for line in lines][-1] == "final"
    listed = subprocess.run(RLM + ["runs", "list", "--json", "--limit", "0"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert {r["run_id"] for r in json.loads(listed.stdout)} == ids
