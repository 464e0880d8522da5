"""``rlm bench run -j N --processes P``: the cases shared by forked worker processes, as a user runs it — every case
run once and saved, Ctrl-C keeping what finished (then ``--resume``), a worker that dies named in one error."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from bench_data import BENCH, RLM_SCRIPT, repl, write_script
from bench_data.fixtures import isolated_env  # noqa: F401 (fixture)

from rlm_bench.summary import BenchmarkSummary

pytestmark = pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="worker processes are forked: Linux")


def numbers_pack(work: Path, cases: int, delay: float) -> list[str]:
    """A pack of ``cases`` cases answered after ``delay`` seconds each; the command that runs it."""
    (work / "numbers.jsonl").write_text("".join(
        json.dumps({"id": f"case_{i}", "task": f"Return number {i}", "answer": str(i)}) + "\n" for i in range(cases)))
    write_script(work / "numbers.json", [{"match": f"Return number {i}\\b", "text": repl(f"FINAL('{i}')"),
                                          "delay": delay} for i in range(cases)])
    return [RLM_SCRIPT, "bench", "run", "--pack", str(work / "numbers.jsonl"), "--model", "scripted:numbers.json",
            "--sandbox", "process", "-q"]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RLM_")} | {"RLM_PLUGINS": BENCH}


def workers_of(pid: int) -> list[int]:
    """The forked worker processes of ``pid``: its children running the same command line."""
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        command = f.read()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                same = f.read() == command
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and same:
            found.append(int(entry))
    return found


def start(command: list[str], work: Path) -> tuple[subprocess.Popen, list[int]]:
    """Start the benchmark; once its workers run, return them."""
    process = subprocess.Popen(command, cwd=work, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        workers = workers_of(process.pid)
        if len(workers) == 2:
            return process, workers
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"no two workers: {process.communicate()[1].decode()[-2000:]}")


def saved_cases(work: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in (work / ".rlm" / "benchmarks").glob("bench_*/cases/*.json")}


def wait_for_cases(work: Path, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(saved_cases(work)) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{pid}") for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_two_worker_processes_run_every_case_once(isolated_env):
    work = Path(isolated_env["WORK"])
    process, workers = start([*numbers_pack(work, 24, 0.05), "-j", "8", "--processes", "2", "--json"], work)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    summary = BenchmarkSummary.model_validate_json(out)
    assert summary.metrics.cases == 24 and summary.metrics.accuracy == 1.0
    assert sorted(c.case_id for c in summary.cases) == sorted(f"case_{i}" for i in range(24))
    runs = {c.run_id for c in summary.cases}
    assert len(runs) == 24 and all(Path(c.trajectory_path).is_file() for c in summary.cases)
    assert len(saved_cases(work)) == 24 and gone(workers)


def test_ctrl_c_keeps_the_finished_cases_of_every_worker_and_resume_finishes(isolated_env):
    work = Path(isolated_env["WORK"])
    command = numbers_pack(work, 16, 0.4)
    process, workers = start([*command, "-j", "4", "--processes", "2"], work)
    wait_for_cases(work, 4)
    os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole process group
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err.decode()
    assert "interrupted" in err.decode() and "--resume" in err.decode() and "Traceback" not in err.decode()
    finished = saved_cases(work)
    assert 4 <= len(finished) < 16 and gone(workers)
    bench_id = next((work / ".rlm" / "benchmarks").glob("bench_*/")).name
    done = subprocess.run([*command[:3], "--resume", bench_id, "-j", "4", "--processes", "2", "--json"], cwd=work,
                          env=environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = BenchmarkSummary.model_validate_json(done.stdout)
    assert summary.resumed_cases == len(finished) and summary.metrics.cases == 16 and summary.metrics.accuracy == 1.0
    after = saved_cases(work)
    assert {name: after[name] for name in finished} == finished, "a finished case ran again"


def test_a_worker_that_dies_is_one_error_and_the_finished_cases_stay(isolated_env):
    work = Path(isolated_env["WORK"])
    process, workers = start([*numbers_pack(work, 16, 0.4), "-j", "4", "--processes", "2"], work)
    wait_for_cases(work, 2)
    os.kill(workers[0], signal.SIGKILL)
    _, err = process.communicate(timeout=60)
    text = err.decode()
    assert process.returncode == 1, text
    assert "a benchmark worker process ended (signal 9) while running case(s) case_" in text
    assert "--resume" in text and "Traceback" not in text
    assert len(saved_cases(work)) >= 2 and gone(workers)


def test_a_shared_budget_covers_the_whole_benchmark(isolated_env):
    """``--shared-budget``: ``[run] max_llm_calls = 2`` for all cases together, so the third case's sub-call is
    refused; without it each case has its own two calls."""
    work = Path(isolated_env["WORK"])
    (work / "rlm.toml").write_text("[run]\nmax_llm_calls = 2\n")
    (work / "three.jsonl").write_text("".join(
        json.dumps({"id": f"case_{i}", "task": f"Return one ({i})", "answer": "1"}) + "\n" for i in range(3)))
    write_script(work / "root.json", [{"match": "a note", "text": "FINAL(1)"},
                                      {"match": ".", "text": repl("note = llm_query('say a note')\nprint(note)")}])
    write_script(work / "sub.json", [{"match": ".", "text": "a note"}])
    command = [RLM_SCRIPT, "bench", "run", "--pack", str(work / "three.jsonl"), "--model", "scripted:root.json",
               "--sub-model", "scripted:sub.json", "--sandbox", "process", "-q", "--json"]

    def reasons(*extra: str) -> list[str]:
        done = subprocess.run([*command, *extra], cwd=work, env=environment(), capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        cases = BenchmarkSummary.model_validate_json(done.stdout).cases
        return [c.termination_reason for c in sorted(cases, key=lambda c: c.case_id)]

    assert reasons("--shared-budget") == ["final", "final", "max_llm_calls"]
    assert reasons() == ["final", "final", "final"]


def test_how_many_processes_share_the_cases(monkeypatch):
    """One process per 8 cases at once, at most two per core (a second process per core lets the kernel share
    the core between two bursts of cases); ``--processes`` decides when given; threads only below 16 cases."""
    from rlm_bench import shards

    monkeypatch.setattr(shards.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(shards.threading, "active_count", lambda: 1)  # as in `rlm bench run`: no thread yet
    assert [shards.worker_processes(n) for n in (1, 8, 15, 16, 24, 32, 64, 256)] == [1, 1, 1, 2, 3, 4, 4, 4]
    assert shards.worker_processes(32, requested=1) == 1 and shards.worker_processes(32, requested=3) == 3
    assert shards.worker_processes(2, requested=8) == 2  # never more processes than cases at once
