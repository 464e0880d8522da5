"""Faults around a run's record: a disk that fills up mid-run keeps the answer (exit 3, every line of the
trajectory whole), an unwritable run home is one clear error, a file in the runs folder that is not a trajectory
is listed as unreadable with the reason, and a torn last line is skipped by every reader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RLM = [sys.executable, "-m", "rlm_host"]
NOISY = "```repl\nprint('x' * 4000)\n```"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(RLM_HOME=str(home), RLM_PLUGINS="rlm-runs")  # rlm runs, rlm replay
    return env


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KB filesystem (tmpfs) where the machine allows mounting one; else a process file-size limit, which
    fails writes the same way (a real OSError from the kernel, EFBIG instead of ENOSPC)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode == 0:
        yield mount, None
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    else:
        import resource

        def limit():  # in the child only: writes past 64 KB fail with EFBIG instead of killing the process
            import signal

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

        yield mount, limit


def _run_on(tmp_path: Path, small_disk, flag: str) -> subprocess.CompletedProcess:
    """A run of 30 noisy steps and an answer, its run home on the small disk."""
    disk, preexec = small_disk
    script = tmp_path / "script.json"
    script.write_text(json.dumps([NOISY] * 30 + ["FINAL(42)"]))
    return subprocess.run(RLM + ["run", "q", "--model", f"scripted:{script}", "--sandbox", "process", "--max-steps",
                                 "40", flag], cwd=tmp_path, env=_env(disk / "home"), capture_output=True,
                          text=True, preexec_fn=preexec, timeout=120)


def test_a_full_disk_keeps_the_answer(tmp_path, small_disk):
    disk, _ = small_disk
    done = _run_on(tmp_path, small_disk, "--json")
    assert done.returncode == 3, done.stderr
    result = json.loads(done.stdout)
    assert result["final_response"] == "42" and result["completed"] is True
    assert "is incomplete" in result["record_error"] and "Traceback" not in done.stderr
    assert "could not write the trajectory" in done.stderr and str(disk) in done.stderr
    lines = Path(result["trajectory_path"]).read_text().splitlines()
    assert len(lines) > 2 and all(json.loads(line)["type"] for line in lines), "every line whole"
    listed = subprocess.run(RLM + ["runs", "list", "--json"], cwd=tmp_path, env=_env(disk / "home"),
                            capture_output=True, text=True)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [result["run_id"]]
    replayed = subprocess.run(RLM + ["replay", result["run_id"]], cwd=tmp_path, env=_env(disk / "home"),
                              capture_output=True, text=True)
    assert replayed.returncode == 0 and "step 1" in replayed.stdout, replayed.stderr


def test_a_full_disk_still_prints_the_answer_without_json(tmp_path, small_disk):
    done = _run_on(tmp_path, small_disk, "--quiet")
    assert done.returncode == 3 and done.stdout.strip() == "42", done.stderr


def test_an_unwritable_run_home_is_one_clear_error(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the run home should be")
    script = tmp_path / "script.json"
    script.write_text('["FINAL(1)"]')
    done = subprocess.run(RLM + ["run", "q", "--model", f"scripted:{script}", "--sandbox", "process"],
                          cwd=tmp_path, env=_env(blocker / "home"), capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: cannot write runs to {blocker}/home/runs") and "hint: " in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_that_is_not_a_trajectory_is_listed_as_unreadable(rlm_cli, rlm_script, rlm_isolated):
    ok = rlm_cli("run", "q", "--model", rlm_script(["FINAL(1)"]), "--sandbox", "process", "--json")
    runs = rlm_isolated.runs / "runs"
    (runs / "run_garbage.jsonl").write_bytes(os.urandom(2048))
    (runs / "run_empty.jsonl").write_bytes(b"")
    listed = rlm_cli("runs", "list", plugins="rlm-runs")
    assert json.loads(ok.out)["run_id"] in listed.out
    assert "unreadable: " in listed.out
    assert "run_garbage.jsonl: not a trajectory: binary data (2,048 bytes)" in listed.out
    assert "run_empty.jsonl: empty: the run stopped before its first event was written" in listed.out
    data = json.loads(rlm_cli("runs", "list", "--json", plugins="rlm-runs").out)
    assert {r["run_id"]: r["termination_reason"] for r in data}["run_garbage"] == "unreadable"
    replayed = rlm_cli("replay", "run_garbage", plugins="rlm-runs")
    assert replayed.code == 2 and "is not a trajectory" in replayed.err and "probably killed" not in replayed.err


def test_a_torn_last_line_is_skipped_by_every_reader(rlm_cli, rlm_script, rlm_isolated):
    result = json.loads(rlm_cli("run", "q", "--model", rlm_script([NOISY, "FINAL(7)"]), "--sandbox", "process",
                                "--json").out)
    path = Path(result["trajectory_path"])
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # killed while writing its final event
    listed = json.loads(rlm_cli("runs", "list", "--json", plugins="rlm-runs").out)
    assert listed[0]["termination_reason"] == "interrupted" and listed[0]["steps"] == 2
    replayed = rlm_cli("replay", result["run_id"], plugins="rlm-runs")
    assert replayed.code == 0 and "truncated last line skipped" in replayed.err
