"""Files in folders someone else can write, tried as an attacker would, through the real ``rlm`` command.

``@FILE`` instructions name a path in a project, which may be a cloned one; the registry of live runs is a private
per-user folder (``~/.local/state/rlm/active``: 0700, this user's, not a link) whose entries are still read as
untrusted input. What is planted there — a link where rlm writes a file, a FIFO where it reads one — must neither
redirect a write nor hang a command: cancel files and registry entries are new files renamed over their name (a
planted link is replaced, not followed), and what is read is a regular file, opened without blocking and read
bounded (``rlm_host.context.read_regular``). Each command runs in a subprocess with a timeout: a hang fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

RLM = str(Path(sys.executable).with_name("rlm"))
#: Seconds a command may take here: a command blocked on a FIFO never returns.
PATIENCE = 60


def rlm(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``rlm ARGS`` with ``home`` as its run home and rlm-runs the only plugin (``rlm runs``); TimeoutExpired (a
    failure) if it hangs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update({"RLM_HOME": str(home), "RLM_PLUGINS": "rlm-runs", "HOME": str(home.parent)})
    return subprocess.run([RLM, *args], capture_output=True, text=True, env=env, cwd=cwd or home.parent,
                          timeout=PATIENCE)


def registry() -> Path:
    """This test's registry folder (``$XDG_STATE_HOME/rlm/active``: ``conftest.py`` gives each test its own)."""
    from rlm_host.sdk.embedding import ActiveRuns

    return ActiveRuns().dir


def plant_entry(active: Path, run_id: str) -> None:
    """A registry entry as another machine sharing this home folder would write it (its process cannot be
    checked from here)."""
    active.mkdir(parents=True, exist_ok=True, mode=0o700)
    entry = {"run_id": run_id, "pid": 4242, "host": "another-machine", "started": "2026-01-01T00:00:00Z"}
    (active / f"{run_id}.json").write_text(json.dumps(entry))


# ---------------------------------------------------------------------------------------------- writes


def test_cancel_all_replaces_planted_links_instead_of_writing_through_them(tmp_path):
    home = tmp_path / "home"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    created = tmp_path / "created-by-rlm.txt"
    plant_entry(registry(), "run_to_victim")
    (registry() / "run_to_victim.cancel").symlink_to(victim)
    plant_entry(registry(), "run_to_nowhere")
    (registry() / "run_to_nowhere.cancel").symlink_to(created)

    done = rlm(home, "runs", "cancel", "--all", "--wait", "0")
    assert done.returncode == 0, done.stderr
    assert "asked run_to_victim to stop" in done.stdout and "asked run_to_nowhere to stop" in done.stdout
    assert victim.read_text() == "precious\n", "the cancel request was written into the link's target"
    assert not created.exists(), "the cancel request created the link's target"
    for run_id in ("run_to_victim", "run_to_nowhere"):
        request = registry() / f"{run_id}.cancel"
        assert not request.is_symlink() and "by_pid" in json.loads(request.read_text())


def test_registering_a_run_never_writes_through_a_planted_temporary_file(tmp_path):
    """The entry's temporary file had a name anyone could guess (``.<run_id>.<pid>.tmp``)."""
    from rlm_host.sdk.embedding import ActiveRuns

    registry().mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (registry() / f".run_planted.{os.getpid()}.tmp").symlink_to(victim)
    registration = ActiveRuns().register("run_planted", threading.Event(), task="t")
    try:
        assert registration is not None
        assert victim.read_text() == "precious\n"
        assert [run.run_id for run in ActiveRuns().list()] == ["run_planted"]
        assert not (registry() / "run_planted.json").is_symlink()
    finally:
        registration and registration.close()


def test_a_linked_registry_folder_is_never_written(tmp_path, caplog):
    """The registry folder planted as a link to another folder: a run stays unregistered, a listing and a cancel
    are refused and write nothing; the saved runs are still listed."""
    from rlm_host.sdk.embedding import ActiveRuns

    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    plant_entry(elsewhere, "run_there")
    home.mkdir()
    registry().parent.mkdir(parents=True)
    registry().symlink_to(elsewhere)
    assert ActiveRuns().register("run_here", threading.Event()) is None
    for args in (["runs", "cancel", "--all", "--wait", "0"], ["runs", "active"]):
        done = rlm(home, *args)
        assert done.returncode == 2 and "registry of active runs cannot be used" in done.stderr, done.stderr
        assert "not a folder" in done.stderr and "Traceback" not in done.stderr
    assert rlm(home, "runs", "list").returncode == 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["run_there.json"]


def test_the_registry_folder_is_private(tmp_path):
    """Made 0700 with 0600 entries; a looser mode is tightened before an entry is written or read."""
    from rlm_host.sdk.embedding import ActiveRuns

    registration = ActiveRuns().register("run_private", threading.Event(), task="t")
    try:
        assert registration is not None
        assert registry().stat().st_mode & 0o777 == 0o700
        assert (registry() / "run_private.json").stat().st_mode & 0o777 == 0o600
        registry().chmod(0o777)
        assert [run.run_id for run in ActiveRuns().list()] == ["run_private"]
        assert registry().stat().st_mode & 0o777 == 0o700
    finally:
        registration and registration.close()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to make another user's folder")
def test_another_users_registry_folder_is_refused(tmp_path):
    from rlm_host.sdk.embedding import ActiveRuns

    plant_entry(registry(), "run_theirs")
    os.chown(registry(), 65534, 65534)
    assert ActiveRuns().register("run_mine", threading.Event()) is None
    done = rlm(tmp_path / "home", "runs", "cancel", "--all", "--wait", "0")
    assert done.returncode == 2 and "belongs to another user" in done.stderr, done.stderr
    assert sorted(p.name for p in registry().iterdir()) == ["run_theirs.json"]


# ---------------------------------------------------------------------------------------------- reads


def test_a_fifo_in_the_registry_hangs_no_command(tmp_path):
    home = tmp_path / "home"
    plant_entry(registry(), "run_real")
    os.mkfifo(registry() / "run_fifo.json")
    os.mkfifo(registry() / "run_fifo.cancel")
    (registry() / "run_linked.json").symlink_to(registry() / "run_real.json")  # a link is no entry either
    listed = rlm(home, "runs", "active", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [run["run_id"] for run in json.loads(listed.stdout)] == ["run_real"]
    assert rlm(home, "runs", "active").returncode == 0
    assert rlm(home, "runs", "list").returncode == 0  # a saved run's status asks the registry too
    cancelled = rlm(home, "runs", "cancel", "--all", "--wait", "0")
    assert cancelled.returncode == 0 and "asked run_real to stop" in cancelled.stdout


def test_a_huge_registry_entry_is_not_read(tmp_path):
    home = tmp_path / "home"
    plant_entry(registry(), "run_real")
    entry = {"run_id": "run_huge", "pid": 4242, "host": "another-machine", "started": "2026-01-01T00:00:00Z",
             "task": "x" * (1 << 20)}
    (registry() / "run_huge.json").write_text(json.dumps(entry))
    listed = rlm(home, "runs", "active", "--json")
    assert [run["run_id"] for run in json.loads(listed.stdout)] == ["run_real"]


@pytest.mark.parametrize("where", ["flag", "project file"])
def test_instructions_from_a_fifo_are_refused_not_waited_for(tmp_path, where):
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    os.mkfifo(project / "notes")
    script = project / "script.json"
    script.write_text(json.dumps({"responses": ["FINAL(1)"]}))
    args = ["run", "q", "--model", f"scripted:{script}", "--sandbox", "process"]
    if where == "flag":
        args += ["--instructions", "@notes"]
    else:
        (project / "rlm.toml").write_text('[run]\ninstructions = "@notes"\n')
    done = rlm(home, *args, cwd=project)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot read notes: not a regular file" in done.stderr and "Traceback" not in done.stderr


def test_instructions_from_a_regular_file_still_work(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "notes.md").write_text("Answer in French.\r\nAlways.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": ["FINAL(1)"]}))
    done = rlm(home, "run", "q", "--model", f"scripted:{script}", "--sandbox", "process", "--instructions",
               "@notes.md", "--json")
    assert done.returncode == 0, done.stderr
    events = Path(json.loads(done.stdout)["trajectory_path"]).read_text()
    assert "Answer in French.\\nAlways." in events


def test_planted_trajectories_in_a_cloned_project_neither_hang_nor_flood(tmp_path):
    """A project's ``.rlm/runs`` comes with the clone: a FIFO, a link to a device and a huge sparse file named like
    runs are listed as unreadable or not at all, and naming one fails at once with exit 2."""
    home = tmp_path / "project" / ".rlm"
    runs = home / "runs"
    runs.mkdir(parents=True)
    os.mkfifo(runs / "run_fifo.jsonl")
    (runs / "run_zero.jsonl").symlink_to("/dev/zero")
    with open(runs / "run_huge.jsonl", "wb") as handle:  # sparse: no disk used
        handle.truncate(600 * 1024 * 1024)
    listed = rlm(home, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {run["run_id"]: run for run in json.loads(listed.stdout)}
    assert set(rows) == {"run_huge"} and rows["run_huge"]["termination_reason"] == "unreadable"
    assert "larger than" in rows["run_huge"]["problem"]  # refused by its size, never read into memory
    for ref in ("run_fifo", "run_zero", "run_huge"):
        shown = rlm(home, "runs", "show", ref)
        assert shown.returncode == 2, (ref, shown.stdout, shown.stderr)
        assert "Traceback" not in shown.stderr


def test_a_trajectory_swapped_for_a_fifo_after_listing_is_not_waited_for(tmp_path):
    from rlm_host.trajectory.store import CorruptTrajectoryError, RunStore

    store = RunStore(tmp_path)
    (tmp_path / "runs").mkdir()
    fifo = tmp_path / "runs" / "run_swapped.jsonl"
    os.mkfifo(fifo)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(store.summarize(fifo)), daemon=True)
    reader.start()
    reader.join(PATIENCE)
    assert done and done[0].termination_reason == "unreadable"
    with pytest.raises(CorruptTrajectoryError, match="not a trajectory file"):
        store._read(fifo)
