"""Four `rlm bench run` processes at once in one run home: every benchmark finishes, every case trajectory is
valid, and the leaderboard lists all four."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from bench_data import BENCH, RLM_SCRIPT, repl, write_script
from bench_data.fixtures import isolated_env  # noqa: F401 (fixture)


@pytest.mark.slow
def test_four_concurrent_benchmarks_in_one_home(isolated_env):
    work = Path(isolated_env["WORK"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")} | {"RLM_PLUGINS": BENCH}
    processes = []
    for bench in range(4):
        pack = work / f"pack{bench}.jsonl"
        pack.write_text("".join(json.dumps({"id": f"case_{i}", "task": f"Return number {i}", "answer": str(i)}) + "\n"
                                for i in range(5)))
        write_script(work / f"model{bench}.json",
                     [{"match": f"Return number {i}\\b", "text": repl(f"FINAL('{i}')")} for i in range(5)])
        processes.append(subprocess.Popen([RLM_SCRIPT, "bench", "run", "--pack", str(pack), "--model",
                                           f"scripted:model{bench}.json", "--sandbox", "process", "-j", "2", "-q",
                                           "--json"], cwd=work, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
    ids = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        summary = json.loads(out)
        assert summary["metrics"]["accuracy"] == 1.0 and summary["metrics"]["cases"] == 5
        ids.append(summary["benchmark_id"])
    assert len(set(ids)) == 4
    trajectories = list((work / ".rlm" / "runs").glob("*.jsonl"))
    assert len(trajectories) == 20
    for path in trajectories:
        assert json.loads(path.read_text().splitlines()[-1])["type"] == "final"
    board = subprocess.run([RLM_SCRIPT, "leaderboard", "--json"], cwd=work, env=env, capture_output=True, text=True)
    assert board.returncode == 0, board.stderr
    assert {row["benchmark_id"] for row in json.loads(board.stdout)["rows"]} == set(ids), "all four on the board"
