"""Abort from anywhere: every run registers in ``<home>/active``; ``rlm runs cancel`` stops it from another process."""

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


def cli(home: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "RLM_HOME": str(home)}
    return subprocess.run([*RLM_CMD, *args], capture_output=True, text=True, env=env, timeout=timeout)


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
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        registry = ActiveRuns(home)
        run = wait_for(lambda: registry.list() and registry.list()[0])
        assert run.status == "active" and run.pid == proc.pid and run.task == "a slow task"
        assert run.command.startswith("rlm_host run") or run.command.startswith("__main__.py run")
        wait_for(lambda: '"type":"model_call_start"' in Path(run.trajectory).read_text().replace(" ", "")
                 and Path(run.trajectory).read_text().count("model_call_start") >= 2)  # fmt: skip
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


def test_cancel_all_stops_every_api_run_of_this_process_and_releases_their_sandboxes(tmp_path):
    home = tmp_path / "home"
    results, threads = [], []
    for n in range(2):
        root = ScriptedConnector.from_responses(["```repl\nx = 1\n```", {"text": "FINAL(1)", "delay": 60}])
        rlm = RLM(home=home, sandbox="process", connectors={"root": root, "sub": root})
        thread = threading.Thread(target=lambda r=rlm, n=n: results.append(r.completion(None, f"task {n}")))
        thread.start()
        threads.append(thread)
    registry = ActiveRuns(home)
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
    (home / "active").mkdir(parents=True)
    entry = {"run_id": "run_dead_1", "pid": pid, "host": os.uname().nodename, "started": "2026-01-01T00:00:00Z"}
    (home / "active" / "run_dead_1.json").write_text(json.dumps(entry))
    reused = {**entry, "run_id": "run_reused_1", "pid": os.getpid(), "process_start": 1}  # our pid, not our start
    (home / "active" / "run_reused_1.json").write_text(json.dumps(reused))
    assert {r.run_id: r.status for r in ActiveRuns(home).list()} == {"run_dead_1": "dead", "run_reused_1": "dead"}
    shown = cli(home, "runs", "active")
    statuses = [line.split()[1] for line in shown.stdout.splitlines() if line.startswith("run_")]
    assert statuses == ["dead", "dead"] and "2 dead" in shown.stdout
    assert cli(home, "runs", "cancel", "--all").stdout.strip() == "no active runs"
    removed = cli(home, "runs", "cancel", "run_dead")
    assert removed.returncode == 0 and "was not running" in removed.stdout
    assert "pruned run_reused_1" in cli(home, "runs", "active", "--prune").stdout
    assert ActiveRuns(home).list() == []


def test_bad_cancel_requests_are_clear_errors(tmp_path):
    home = tmp_path / "home"
    neither = cli(home, "runs", "cancel")
    assert neither.returncode == 2 and "give a run id or --all" in neither.stderr
    unknown = cli(home, "runs", "cancel", "run_nope")
    assert unknown.returncode == 2 and "no active run matches 'run_nope'" in unknown.stderr
    assert "Traceback" not in unknown.stderr + neither.stderr


def test_a_planted_entry_cannot_name_a_path_outside_the_registry(tmp_path):
    """A cloned project's ``.rlm/active`` is not ours: an entry whose id is a path is ignored, never unlinked."""
    home = tmp_path / "home"
    (home / "active").mkdir(parents=True)
    victim = tmp_path / "victim.json"
    victim.write_text("{}")
    planted = {"run_id": "../../victim", "pid": os.getpid(), "host": os.uname().nodename,
               "started": "2026-01-01T00:00:00Z"}  # fmt: skip
    (home / "active" / "run_x.json").write_text(json.dumps(planted))
    (home / "active" / "garbage.json").write_text("not json")
    assert ActiveRuns(home).list() == []
    assert cli(home, "runs", "cancel", "--all").stdout.strip() == "no active runs"
    ActiveRuns(home).prune()
    assert victim.exists() and not (tmp_path / "victim.cancel").exists()


def test_an_unwritable_home_leaves_the_run_going_unregistered(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "active").write_text("a file where the folder should be")
    root = ScriptedConnector.from_responses(["FINAL(7)"])
    result = RLM(home=home, sandbox="process", connectors={"root": root, "sub": root}).completion(None, "q")
    assert result.final_response == "7"


@pytest.mark.parametrize("argv, words", [
    (["/usr/bin/rlm", "run", "secret task text", "--api-key", "x"], "rlm run"),
    (["rlm", "mcp", "serve", "--http"], "rlm mcp serve"),
    (["script.py", "--token=abc"], "script.py"),
])  # fmt: skip
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
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # fmt: skip
    try:
        registry = ActiveRuns(home)
        run = wait_for(lambda: registry.list() and registry.list()[0])
        on_disk = b"".join(path.read_bytes() for path in (home / "active").iterdir())
        keyless = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
        shown = [subprocess.run([*RLM_CMD, "runs", "active", *flag], capture_output=True, text=True, timeout=60,
                                env={**keyless, "RLM_HOME": str(home)}).stdout for flag in ([], ["--json"])]  # fmt: skip
    finally:
        proc.kill()
        proc.wait()
    for text in (run.task, on_disk.decode(), *shown):
        assert secret[:10] not in text, text
    assert run.task.startswith("deploy with *** then xxx") and run.task.endswith("***")


def test_listings_show_control_characters_from_runs_never_send_them(tmp_path):
    home = tmp_path / "home"
    (home / "active").mkdir(parents=True)
    entry = {"run_id": "run_shown_1", "pid": 4242, "host": "another-machine", "started": "2026-01-01T00:00:00Z",
             "task": f"task {CONTROLS}", "model": f"m{CONTROLS}", "environment": f"e{CONTROLS}",
             "command": f"rlm {CONTROLS}"}  # fmt: skip
    (home / "active" / "run_shown_1.json").write_text(json.dumps(entry))
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
