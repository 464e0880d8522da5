"""Abort from anywhere: every run registers in this user's registry (``$XDG_STATE_HOME/rlm/active``, each test has
its own: ``conftest.py``); ``rlm runs cancel`` stops it from another process, in any folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rlm_host.sdk.embedding import RLM, ActiveRuns
from rlm_host.testing import ScriptedConnector

RLM_CMD = [sys.executable, "-m", "rlm_host"]


def cli(home: Path | None, *args: str, timeout: float = 60, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``rlm ARGS`` with ``home`` as its run home (None: the default, ``./.rlm`` in ``cwd``)."""
    env = {k: v for k, v in os.environ.items() if k != "RLM_HOME"}
    if home is not None:
        env["RLM_HOME"] = str(home)
    return subprocess.run([*RLM_CMD, *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)


def registry_dir() -> Path:
    """This test's registry folder, made as ``register`` makes it."""
    folder = ActiveRuns().dir
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def plant(run_id: str, **fields) -> Path:
    """An entry written straight into the registry, as no run of ours wrote it."""
    entry = {"run_id": run_id, "pid": 4242, "host": "another-machine", "started": "2026-01-01T00:00:00Z", **fields}
    path = registry_dir() / f"{run_id}.json"
    path.write_text(json.dumps(entry))
    return path


def wait_for(condition, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


def slow_script(path: Path, delay: float = 60.0) -> Path:
    """One code step, then a reply that takes ``delay`` seconds: a run that is in a model call when cancelled."""
    path.write_text(json.dumps({"responses": ["```repl\nx = 1\n```", {"text": "FINAL(2)", "delay": delay}]}))
    return path


def test_a_run_in_another_process_is_listed_then_cancelled_during_its_model_call(tmp_path):
    home = tmp_path / "home"
    script = slow_script(tmp_path / "s.json")
    env = {**os.environ, "RLM_HOME": str(home)}
    proc = subprocess.Popen([*RLM_CMD, "run", "a slow task", "--model", f"scripted:{script}", "--sandbox", "process",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        registry = ActiveRuns()
        run = wait_for(lambda: registry.list() and registry.list()[0])
        assert run.status == "active" and run.pid == proc.pid and run.task == "a slow task"
        assert run.home == str(home) and Path(run.trajectory).parent == home / "runs"
        assert run.command.startswith("rlm_host run") or run.command.startswith("__main__.py run")
        wait_for(lambda: '"type":"model_call_start"' in Path(run.trajectory).read_text().replace(" ", "")
                 and Path(run.trajectory).read_text().count("model_call_start") >= 2)
        listed = json.loads(cli(home, "runs", "active", "--json").stdout)
        assert [r["run_id"] for r in listed] == [run.run_id] and listed[0]["status"] == "active"
        assert "running" in cli(home, "runs", "list").stdout
        started = time.monotonic()
        cancelled = cli(home, "runs", "cancel", run.run_id[:20])
        assert cancelled.returncode == 0, cancelled.stderr
        assert f"cancelled {run.run_id}" in cancelled.stdout
        out, _ = proc.communicate(timeout=30)
        assert time.monotonic() - started < 5  # the 60 s model call was abandoned
    finally:
        proc.kill()
    result = json.loads(out)
    assert result["termination_reason"] == "cancelled" and "abandoned" in result["error"]
    events = [json.loads(line) for line in Path(result["trajectory_path"]).read_text().splitlines()]
    finals = [e for e in events if e["type"] == "final" and e["depth"] == 0]
    assert finals and finals[0]["data"]["termination_reason"] == "cancelled"
    assert registry.list() == [] and "cancelled" in cli(home, "runs", "list").stdout


def test_a_run_in_one_folder_is_listed_and_cancelled_from_another(tmp_path):
    """``rlm run`` in folder A (its run home ``A/.rlm``); ``rlm runs active`` and ``rlm runs cancel --all`` in
    folder B see and stop it, and say which folder it belongs to."""
    folder_a, folder_b = tmp_path / "a", tmp_path / "b"
    folder_a.mkdir()
    folder_b.mkdir()
    home_a = folder_a.resolve() / ".rlm"
    script = slow_script(folder_a / "s.json")
    env = {k: v for k, v in os.environ.items() if k != "RLM_HOME"}
    proc = subprocess.Popen([*RLM_CMD, "run", "a task in A", "--model", f"scripted:{script}", "--sandbox", "process",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=folder_a)
    try:
        run = wait_for(lambda: ActiveRuns().list() and ActiveRuns().list()[0])
        wait_for(lambda: Path(run.trajectory).read_text().count("model_call_start") >= 2)  # in its slow call
        shown = cli(None, "runs", "active", cwd=folder_b)
        assert shown.returncode == 0, shown.stderr
        row = next(line for line in shown.stdout.splitlines() if line.startswith(run.run_id))
        assert row.split()[1] == "active" and row.endswith(str(home_a)) and "a task in A" in row
        listed = json.loads(cli(None, "runs", "active", "--json", cwd=folder_b).stdout)
        assert [(r["run_id"], r["status"], r["home"], r["pid"]) for r in listed] == [
            (run.run_id, "active", str(home_a), proc.pid)]
        cancelled = cli(None, "runs", "cancel", "--all", cwd=folder_b)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cancelled.stdout.strip() == f"cancelled {run.run_id}"
        out, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    result = json.loads(out)
    assert result["termination_reason"] == "cancelled"
    assert (folder_a / result["trajectory_path"]).resolve().parent == home_a / "runs"
    assert not (folder_b / ".rlm").exists(), "listing and cancelling wrote nothing in the folder they ran in"
    assert ActiveRuns().list() == [] and cli(None, "runs", "active", cwd=folder_b).stdout.strip() == "no active runs"


def test_cancel_all_stops_every_api_run_of_this_process_and_releases_their_sandboxes(tmp_path):
    home = tmp_path / "home"
    results, threads = [], []
    for n in range(2):
        root = ScriptedConnector.from_responses(["```repl\nx = 1\n```", {"text": "FINAL(1)", "delay": 60}])
        rlm = RLM(home=home, sandbox="process", connectors={"root": root, "sub": root})
        thread = threading.Thread(target=lambda r=rlm, n=n: results.append(r.completion(None, f"task {n}")))
        thread.start()
        threads.append(thread)
    registry = ActiveRuns()
    wait_for(lambda: len(registry.list()) == 2)
    time.sleep(0.5)  # both runs are inside their slow model call
    done = cli(home, "runs", "cancel", "--all")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("cancelled run_") == 2
    for thread in threads:
        thread.join(10)
    assert [r.termination_reason for r in results] == ["cancelled", "cancelled"]
    assert all(r.steps == 1 for r in results)
    assert registry.list() == []
    assert cli(home, "runs", "active").stdout.strip() == "no active runs"


def test_a_run_whose_process_died_is_dead_never_active(tmp_path):
    home = tmp_path / "home"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(gone.stdout)
    here = os.uname().nodename
    plant("run_dead_1", pid=pid, host=here)
    plant("run_reused_1", pid=os.getpid(), host=here, process_start=1)  # our pid, not our start
    assert {r.run_id: r.status for r in ActiveRuns().list()} == {"run_dead_1": "dead", "run_reused_1": "dead"}
    shown = cli(home, "runs", "active")
    statuses = [line.split()[1] for line in shown.stdout.splitlines() if line.startswith("run_")]
    assert statuses == ["dead", "dead"] and "2 dead" in shown.stdout
    assert cli(home, "runs", "cancel", "--all").stdout.strip() == "no active runs"
    removed = cli(home, "runs", "cancel", "run_dead")
    assert removed.returncode == 0 and "was not running" in removed.stdout
    assert "pruned run_reused_1" in cli(home, "runs", "active", "--prune").stdout
    assert ActiveRuns().list() == []


def _start_ticks(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_bytes()
    return int(raw[raw.rfind(b")") + 2:].split()[19])


@pytest.fixture
def foreign_pid():
    """A live process of another user: ``sleep`` as nobody when the tests run as root, else process 1."""
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    if os.geteuid() == 0:
        proc = subprocess.Popen(["sleep", "120"], user=65534, group=65534)
        yield proc.pid
        proc.kill()
        proc.wait()
    elif os.stat("/proc/1").st_uid != os.geteuid():
        yield 1
    else:
        pytest.skip("no process of another user to point at")


def test_an_entry_whose_process_is_not_this_users_run_is_dead_and_never_asked(foreign_pid):
    """An entry names a pid: only a process of this user's with the start time the entry records is its run (another
    user's process, or one of ours without a start time to match, is not), and nothing is asked of the others."""
    here = os.uname().nodename
    plant("run_foreign_1", pid=foreign_pid, host=here, process_start=_start_ticks(foreign_pid))
    plant("run_unproven_1", pid=os.getpid(), host=here)  # our process, but the entry cannot say it is this one
    assert {r.run_id: r.status for r in ActiveRuns().list()} == {"run_foreign_1": "dead", "run_unproven_1": "dead"}
    asked = cli(None, "runs", "cancel", "--all", "--wait", "0")
    assert asked.returncode == 0 and asked.stdout.strip() == "no active runs", asked.stdout + asked.stderr
    assert not list(ActiveRuns().dir.glob("*.cancel"))
    removed = cli(None, "runs", "cancel", "run_foreign_1")
    assert removed.returncode == 0 and "was not running" in removed.stdout
    os.kill(foreign_pid, 0)  # still there: a cancel signals no process
    assert [r.run_id for r in ActiveRuns().list()] == ["run_unproven_1"]


def test_a_new_run_sweeps_away_the_entries_of_dead_runs(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = os.uname().nodename
    plant("run_dead_2", pid=int(gone.stdout), host=here)
    plant("run_reused_2", pid=os.getpid(), host=here, process_start=1)
    plant("run_elsewhere_2")  # another machine's (a home folder shared over the network): not judged from here
    (registry_dir() / "run_new_1.cancel").write_text("{}")  # a request left over: not one for a new run
    with_id = threading.Event()
    registration = ActiveRuns().register("run_new_1", with_id, home=str(tmp_path / "h"), task="t")
    try:
        assert registration is not None
        assert {r.run_id: r.status for r in ActiveRuns().list()} == {"run_elsewhere_2": "elsewhere",
                                                                     "run_new_1": "active"}
        time.sleep(0.5)
        assert not with_id.is_set()
    finally:
        registration and registration.close()
    assert [r.run_id for r in ActiveRuns().list()] == ["run_elsewhere_2"]


def test_bad_cancel_requests_are_clear_errors(tmp_path):
    home = tmp_path / "home"
    neither = cli(home, "runs", "cancel")
    assert neither.returncode == 2 and "give a run id or --all" in neither.stderr
    unknown = cli(home, "runs", "cancel", "run_nope")
    assert unknown.returncode == 2 and "no active run matches 'run_nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr + neither.stderr


def test_a_planted_entry_cannot_name_a_path_outside_the_registry(tmp_path):
    """An entry is read as untrusted input: one whose id is a path is ignored, never unlinked or written beside."""
    home = tmp_path / "home"
    registry = registry_dir()
    victim = registry.parent.parent / "victim.json"
    victim.write_text("{}")
    planted = {"run_id": "../../victim", "pid": os.getpid(), "host": os.uname().nodename,
               "started": "2026-01-01T00:00:00Z"}
    (registry / "run_x.json").write_text(json.dumps(planted))
    (registry / "garbage.json").write_text("not json")
    assert ActiveRuns().list() == []
    assert cli(home, "runs", "cancel", "--all").stdout.strip() == "no active runs"
    ActiveRuns().prune()
    assert victim.exists() and not (victim.parent / "victim.cancel").exists()


def test_an_unwritable_registry_leaves_the_run_going_unregistered(tmp_path, caplog):
    folder = ActiveRuns().dir
    folder.parent.mkdir(parents=True)
    folder.write_text("a file where the folder should be")
    root = ScriptedConnector.from_responses(["FINAL(7)"])
    rlm = RLM(home=tmp_path / "home", sandbox="process", connectors={"root": root, "sub": root})
    result = rlm.completion(None, "q")
    assert result.final_response == "7"
    assert "not in the registry of active runs" in caplog.text


@pytest.mark.parametrize("argv, words", [
    (["/usr/bin/rlm", "run", "secret task text", "--api-key", "x"], "rlm run"),
    (["rlm", "mcp", "serve", "--http"], "rlm mcp serve"),
    (["script.py", "--token=abc"], "script.py"),
])
def test_the_registry_names_the_command_without_its_arguments(monkeypatch, argv, words):
    from rlm_host.trajectory.active import command_words

    monkeypatch.setattr(sys, "argv", argv)
    assert command_words() == words


CONTROLS = "\x9b2J\x9d0;title\x07\x1b[31m\x7f\x85"  # C1 CSI and OSC, BEL, ESC, DEL, NEL


def _raw_controls(text: str) -> list[str]:
    return [c for c in text if c not in "\n\t" and not c.isprintable()]


def test_a_secret_in_the_task_stays_out_of_the_registry_and_its_listing(tmp_path):
    """The key is known to the run's process (its environment); the entry on disk and ``rlm runs active`` in a
    shell that does not know it show ``***``, even where the task is clipped in the middle of a key."""
    home = tmp_path / "home"
    secret = "sk-test-Zq81LmN0pX4rT7uV9wY2"
    task = f"deploy with {secret} then " + "x" * 139 + secret  # clipped first, 14 characters of a key stay
    script = slow_script(tmp_path / "s.json")
    env = {**os.environ, "RLM_HOME": str(home), "OPENAI_API_KEY": secret}
    proc = subprocess.Popen([*RLM_CMD, "run", task, "--model", f"scripted:{script}", "--sandbox", "process"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        registry = ActiveRuns()
        run = wait_for(lambda: registry.list() and registry.list()[0])
        on_disk = b"".join(path.read_bytes() for path in ActiveRuns().dir.iterdir())
        keyless = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        shown = [subprocess.run([*RLM_CMD, "runs", "active", *flag], capture_output=True, text=True, timeout=60,
                                env={**keyless, "RLM_HOME": str(home)}).stdout
                 for flag in ([], ["--json"])]
    finally:
        proc.kill()
        proc.wait()
    for text in (run.task, on_disk.decode(), *shown):
        assert secret[:10] not in text, text
    assert run.task.startswith("deploy with *** then xxx") and run.task.endswith("***")


def test_listings_show_control_characters_from_runs_never_send_them(tmp_path):
    home = tmp_path / "home"
    plant("run_shown_1", task=f"task {CONTROLS}", model=f"m{CONTROLS}", environment=f"e{CONTROLS}",
          command=f"rlm {CONTROLS}", home=f"/tmp/{CONTROLS}")
    active = cli(home, "runs", "active")
    assert "run_shown_1" in active.stdout and not _raw_controls(active.stdout), repr(active.stdout)
    assert "\\u009b" in cli(home, "runs", "active", "--json").stdout  # escaped, not raw
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [f"```repl\nprint({CONTROLS!r})\n```", f"FINAL(done {CONTROLS})"]}))
    done = cli(home, "run", f"a task {CONTROLS}", "--model", f"scripted:{script}", "--sandbox", "process", "--json")
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    for args in (["runs", "list"], ["runs", "show", run_id]):
        shown = cli(home, *args)
        assert shown.returncode == 0 and "a task" in shown.stdout
        assert not _raw_controls(shown.stdout), (args, shown.stdout)
    for args in (["runs", "compare", run_id, run_id], ["runs", "compare", run_id, run_id, "--json"]):
        compared = cli(home, *args)
        assert compared.returncode == 0 and not _raw_controls(compared.stdout), (args, compared.stdout)
