"""``rlm bench sweep --executor ray`` against a real Ray cluster on this machine (``bench_data.ray_cluster``): a head
and a second node, each a ``ray start`` of its own with token authentication on, the driver an ``rlm`` process
joining with ``--address`` (its HOME holds the cluster's token in ``~/.ray/auth_token``, as on a machine where
someone ran ``ray get-auth-token``). Cases are scripted-model runs of a small pack.

The second node loads no ``rlm-sandbox-monty`` (``RLM_PLUGINS`` of its raylet, which its workers inherit), so a
case that asks it for the monty sandbox fails there, naming the node. Nodes killed by a test are nodes of their
own, so the shared head and second node stay up for the others.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench_data import BENCH, RLM_SCRIPT
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)
from bench_data.ray_cluster import LocalCluster, ray_installed

#: What the driver and the head load; the second node lacks the monty sandbox.
PLUGINS = f"{BENCH},rlm-sink-local,rlm-sandbox-monty,rlm-runs"  # rlm-runs: `rlm replay` in the driver
PLUGINS_NODE2 = f"{BENCH},rlm-sink-local"

PACK = """\
presets:
  tiny:
    description: four quick cases
    cases:
      - {case_id: a, task: "What is six times seven?", expected: "42", scorer: exact}
      - {case_id: b, task: "What is forty-two in digits?", expected: "42", scorer: exact}
      - {case_id: c, task: "Say 42.", expected: "42", scorer: exact}
      - {case_id: d, task: "Answer 42.", expected: "42", scorer: exact}
"""


def _script(path: Path, delay: float, steps: int = 1) -> str:
    """A scripted model: ``steps - 1`` REPL steps, then FINAL(42), each reply after ``delay`` seconds."""
    responses = [{"text": "```repl\nx = 6 * 7\nprint(x)\n```", "delay": delay}] * (steps - 1)
    if steps == 1:
        path.write_text(json.dumps({"rules": [{"match": ".", "text": "FINAL(42)", "delay": delay}]}))
    else:
        path.write_text(json.dumps({"responses": [*responses, {"text": "FINAL(42)", "delay": delay}]}))
    return f"scripted:{path}"


def _sweep_file(folder: Path, name: str, model: str, *, repeat: int = 1, sandbox: str = "process",
                ray: str = "") -> Path:
    path = folder / f"{name}.toml"
    path.write_text(f"""\
[sweep]
name = "{name}"
presets = ["tiny"]
packs = ["pack.yaml"]
models = ["{model}"]
sandboxes = ["{sandbox}"]
repeat = {repeat}

[run]
timeout = 60

[bench.ray]
num_cpus = 0.25
max_in_flight = 8
{ray}
""")
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A head (custom resource ``head``) and ``node2`` (resource ``node2``, no monty sandbox); stopped by their
    own processes at the end."""
    if not ray_installed():
        pytest.fail('Ray is not installed: scripts/install.sh installs rlm-bench[ray] (pip install "rlm-bench[ray]")')
    root = tmp_path_factory.mktemp("ray")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    c = LocalCluster(root, env)
    try:
        c.start(resources={"head": 1}, env={"RLM_PLUGINS": PLUGINS})
        c.add_node("node2", resources={"node2": 1}, env={"RLM_PLUGINS": PLUGINS_NODE2})
        yield c
    finally:
        c.stop()


@pytest.fixture
def place(cluster: LocalCluster, tmp_path: Path) -> dict[str, Any]:
    """A working folder with the pack, and how to run ``rlm`` there as the cluster's driver."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "pack.yaml").write_text(PACK)
    home = folder / ".rlm"
    env = cluster.driver_env(RLM_PLUGINS=PLUGINS, RLM_HOME=str(home), RLM_TRUST_CONFIG="1")  # its own sweep files

    def rlm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([RLM_SCRIPT, *args], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=timeout)

    def start(*args: str) -> subprocess.Popen:
        return subprocess.Popen([RLM_SCRIPT, *args], cwd=folder, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    return {"folder": folder, "home": home, "rlm": rlm, "start": start, "env": env}


def _node_names(cluster: LocalCluster) -> dict[str, str]:
    """Custom resource → the name sweeps give that node (``IP/node id[:8]``)."""
    names = {}
    for node in cluster.alive_nodes():
        label = next((r for r in node["resources"] if r in ("head", "node2", "node3", "node4")), None)
        if label:
            names[label] = node["id"][:8]
    return names


def _saved(home: Path) -> list[Path]:
    return sorted(home.glob("benchmarks/*/cases/*.json"))


def _record(home: Path, sweep_id: str) -> dict[str, Any]:
    return json.loads((home / "sweeps" / f"{sweep_id}.json").read_text())


def _assert_complete(home: Path, record: dict[str, Any]) -> None:
    """Every case of every point saved exactly once, every point summarised."""
    for point in record["points"]:
        manifest = json.loads((home / "benchmarks" / point["benchmark_id"] / "manifest.json").read_text())
        saved = sorted(p.stem for p in (home / "benchmarks" / point["benchmark_id"] / "cases").glob("*.json"))
        assert saved == sorted(manifest["case_ids"])
        summary = json.loads((home / "benchmarks" / f"{point['benchmark_id']}.json").read_text())
        assert sorted(c["case_id"] for c in summary["cases"]) == sorted(manifest["case_ids"])
    assert sum(n["cases"] for n in record["nodes"].values()) == sum(p["cases"] for p in record["points"])


# ------------------------------------------------------------------------------------------------ without Ray


def test_rlm_and_bench_help_do_not_import_ray():
    code = ("import sys\nfrom rlm_host.cli.main import main\n"
            "for args in (['--help'], ['bench', '--help'], ['bench', 'sweep', '--help']):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "print('RAY-IMPORTED' if 'ray' in sys.modules else 'NO-RAY')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "NO-RAY", out.stderr[-2000:]
    assert "sweep" in out.stdout


def test_without_ray_the_executor_is_one_clear_error(cli, work, monkeypatch):
    (work / "pack.yaml").write_text(PACK)
    sweep = _sweep_file(work, "noray", _script(work / "s.json", 0))
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")  # the test's own sweep file
    code, out, err = cli("bench", "sweep", str(sweep), "--executor", "ray", "-q")
    assert code == 2
    assert 'pip install "rlm-bench[ray]"' in err and "Traceback" not in err
    assert err.count("error:") == 1


def test_auth_environment_gives_a_joining_driver_token_mode_only_with_a_token(tmp_path, monkeypatch):
    from rlm_bench.sweep.ray_executor import auth_environment, token_available

    monkeypatch.setenv("HOME", str(tmp_path))
    bare: dict[str, str] = {}
    assert not token_available(bare) and auth_environment(joining=True, environ=bare) == {}
    own = auth_environment(joining=False, environ=bare)  # a private local Ray: a token of its own, in memory
    assert own["RAY_AUTH_MODE"] == "token" and len(own["RAY_AUTH_TOKEN"]) == 64
    assert not (tmp_path / ".ray").exists()
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("x" * 64)
    assert auth_environment(joining=True, environ=bare) == {"RAY_AUTH_MODE": "token"}
    assert auth_environment(joining=False, environ=bare) == {"RAY_AUTH_MODE": "token"}
    assert auth_environment(joining=True, environ={"RAY_AUTH_MODE": "disabled"}) == {}  # the user chose
    assert token_available({"RAY_AUTH_TOKEN": "abc"})
    assert not token_available({"RAY_AUTH_TOKEN_PATH": str(tmp_path / "missing")})


def test_ray_errors_become_error_results_lost_cases_or_cancellations():
    """What ``ray.get`` raises for a case: an exception that escaped ``run_item`` on a node is that case's error
    naming the node; a crash Ray could not retry away is a lost case with Ray's reason; a cancel is a cancel."""
    from types import SimpleNamespace

    import ray.exceptions as rex

    from rlm_bench.sweep import CaseLost, SweepItem
    from rlm_bench.sweep.ray_executor import RayExecutor

    item = SweepItem("bench_a", "a", manifest={"preset": "tiny", "model": "scripted:x.json", "sandbox": "process"})

    def outcome(exc: BaseException) -> Any:
        executor = object.__new__(RayExecutor)

        def get(ref: Any) -> Any:
            raise exc

        executor.ray = SimpleNamespace(exceptions=rex, get=get)
        executor._items, executor._cancelled, executor._points = {"r": item}, set(), {}
        return executor._outcome("r")

    missing = rex.RayTaskError("ray_case", "Traceback …", ModuleNotFoundError("No module named 'rlm_bench'"),
                               pid=7, ip="10.0.0.9").as_instanceof_cause()
    assert outcome(missing)["node"] == "10.0.0.9"
    result = outcome(missing)["result"]
    assert result["status"] == "error" and result["case_id"] == "a" and result["model"] == "scripted:x.json"
    assert result["error"].startswith("on node 10.0.0.9 (pid 7): ModuleNotFoundError")
    assert "rlm_bench" in result["error"]
    died = outcome(rex.NodeDiedError("Task failed because the node it was running on is dead. Node ID: abc123"))
    assert isinstance(died, CaseLost) and "NodeDiedError" in died.reason and "abc123" in died.reason
    crashed = outcome(rex.RayTaskError("ray_case", "…", rex.WorkerCrashedError(), pid=8, ip="10.0.0.9"))
    assert isinstance(crashed, CaseLost) and "WorkerCrashedError on 10.0.0.9" in crashed.reason
    assert isinstance(outcome(rex.TaskUnschedulableError("no node has node9")), CaseLost)
    assert outcome(rex.TaskCancelledError()) == {"cancelled": True}


#: Ray's internals this repository must not touch (ray._private, ray._raylet, the internal key-value store).
RAY_INTERNALS = re.compile(r"\bray\s*\.\s*_(?:private|raylet)\b|\bfrom\s+ray\s+import\s+[^\n]*\b_(?:private|raylet)\b"
                           r"|\binternal_kv\b")
REPOSITORY = Path(__file__).resolve().parents[3]


def test_no_code_of_the_repository_uses_rays_internals():
    """Ray's public API only: no .py file (host, plugins, tests, benchmarks, scripts) imports or patches
    ``ray._private`` / ``ray._raylet`` or uses ``internal_kv``."""
    assert (REPOSITORY / "rlm_host").is_dir() and (REPOSITORY / "plugins").is_dir(), REPOSITORY
    found, scanned = [], 0
    for folder, subfolders, files in os.walk(REPOSITORY):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d not in ("__pycache__", "build", "dist",
                                                                                     "node_modules", "site-packages")
                         and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if name.endswith(".py") and path != Path(__file__).resolve():  # this file names them to find them
                scanned += 1
                text = path.read_text(encoding="utf-8", errors="replace")
                found += [f"{path.relative_to(REPOSITORY)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
                          for m in RAY_INTERNALS.finditer(text)]
    assert scanned > 100 and Path(__file__).resolve().is_relative_to(REPOSITORY)
    assert not found, "Ray internals used:\n" + "\n".join(found)
    assert RAY_INTERNALS.search("import ray._private.worker") and RAY_INTERNALS.search("from ray import _raylet")
    assert RAY_INTERNALS.search("ray.experimental.internal_kv._internal_kv_get(k)")


def test_a_points_shared_part_goes_to_the_cluster_once():
    """Every case of a point gets the same ObjectRef of the point's manifest and [run] settings (one ray.put a
    point), and only its own fields travel with it; a point with no case in flight is let go of once the next
    point starts."""
    from types import SimpleNamespace

    from rlm_bench.sweep import SweepItem
    from rlm_bench.sweep.ray_executor import RayExecutor

    put, sent = [], []
    executor = object.__new__(RayExecutor)
    executor.ray = SimpleNamespace(put=lambda value: put.append(value) or f"ref{len(put)}")
    executor._task = SimpleNamespace(remote=lambda *args: sent.append(args) or f"task{len(sent)}")
    executor._flag, executor._items, executor._points, executor._cancelled = "flag", {}, {}, set()
    manifest_a, manifest_b, run = {"preset": "tiny", "case_ids": ["a", "b"]}, {"preset": "tiny"}, {"timeout": 60}

    def item(benchmark_id: str, case_id: str, manifest: dict[str, Any]) -> SweepItem:
        return SweepItem(benchmark_id, case_id, manifest=manifest, run=run, cwd="/w")

    first = [executor.submit(item("bench_a", c, manifest_a)) for c in ("a", "b")]
    executor.submit(item("bench_a", "c", dict(manifest_a)))  # an equal copy: the same point
    assert put == [{"manifest": manifest_a, "run": run}]
    assert [args[1:] for args in sent] == [("ref1", "flag")] * 3
    assert SweepItem(**sent[0][0]) == SweepItem("bench_a", "a", cwd="/w")  # the case's own fields, as a dict
    executor.submit(item("bench_b", "a", manifest_b))
    assert put[-1] == {"manifest": manifest_b, "run": run} and sent[-1][1] == "ref2"
    assert set(executor._points) == {"bench_a", "bench_b"}  # bench_a still has cases in flight
    executor.ray.get = lambda ref: {"result": {}}
    for ref in [*first, "task3"]:
        executor._outcome(ref)
    executor.submit(item("bench_c", "a", manifest_b))
    assert set(executor._points) == {"bench_b", "bench_c"} and len(put) == 3


def test_rays_messages_on_stdout_go_to_stderr_as_first_lines(capsys):
    """What Ray's driver prints to stdout while the executor is connected (the cluster's error messages, a log tail
    under them) reaches stderr as ``ray: <first line>``; once released, the stream is the stdout it replaced."""
    from rlm_bench.sweep.ray_executor import _RayMessagesToStderr

    real = sys.stdout
    stream = _RayMessagesToStderr(real)
    print("\x1b[33m(raylet, ip=10.0.0.9)\x1b[0m A worker died or was killed while executing a task.\n"
          "    [state-dump] NodeManager ...\n    [state-dump] more", file=stream)
    stream.flush()
    out, err = capsys.readouterr()
    assert out == "" and err == "ray: A worker died or was killed while executing a task.\n"
    assert stream.encoding == real.encoding
    stream.released = True
    print("{}", file=stream)
    out, err = capsys.readouterr()
    assert out == "{}\n" and err == ""


# ------------------------------------------------------------------------------------------------ a real cluster


@pytest.mark.slow
def test_a_sweep_runs_on_both_nodes_and_the_store_reads_as_usual(cluster, place):
    """(a) cases on both nodes, the record says which ran how many; leaderboard and report read the benchmarks;
    (e) a case that ran on the other node replays on the driver."""
    folder, home, rlm = place["folder"], place["home"], place["rlm"]
    sweep = _sweep_file(folder, "both", _script(folder / "s.json", 0.5), repeat=3)
    done = rlm("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address, "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["status"] == "finished" and record["executor"] == "ray"
    names = _node_names(cluster)
    ran = {name.split("/")[-1]: stats for name, stats in record["nodes"].items()}
    assert set(ran) == {names["head"], names["node2"]}, record["nodes"]
    assert all(stats["cases"] > 0 and stats["failed"] == 0 for stats in ran.values())
    _assert_complete(home, record)
    assert (cluster.home / ".ray" / "auth_token").read_text() == cluster.token  # the driver's token, untouched

    board = rlm("leaderboard", "--json")
    assert board.returncode == 0, board.stderr
    listed = json.dumps(json.loads(board.stdout))
    assert all(point["benchmark_id"] in listed for point in record["points"])
    first = record["points"][0]["benchmark_id"]
    report = rlm("bench", "report", first)
    assert report.returncode == 0 and "tiny" in report.stdout and first in report.stdout

    # (e) trajectories came back: every case's run is in the driver's home, and replays there
    results = [json.loads(p.read_text()) for p in _saved(home)]
    assert len(results) == 12 and all(r["status"] == "completed" and r["correct"] for r in results)
    for result in results:
        assert Path(result["trajectory_path"]).is_file() and Path(result["trajectory_path"]).is_relative_to(home)
    replay = rlm("replay", results[-1]["run_id"])
    assert replay.returncode == 0, replay.stderr
    assert "42" in replay.stdout


@pytest.mark.slow
def test_a_node_without_the_sandbox_fails_its_cases_naming_the_node(cluster, place):
    """(d) node2 has no monty sandbox: its cases are errors naming it, not a silent fallback to another sandbox."""
    folder, home, rlm = place["folder"], place["home"], place["rlm"]
    sweep = _sweep_file(folder, "nomonty", _script(folder / "s.json", 0), sandbox="monty",
                        ray="resources = {node2 = 0.01}")
    done = rlm("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address, "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    node2 = _node_names(cluster)["node2"]
    assert [name.split("/")[-1] for name in record["nodes"]] == [node2]
    results = [json.loads(p.read_text()) for p in _saved(home)]
    assert len(results) == 4
    for result in results:
        assert result["status"] == "error" and result["sandbox"] == "monty", result
        assert "on node " in result["error"] and node2 in result["error"] and "monty" in result["error"]
    assert record["nodes"][next(iter(record["nodes"]))]["failed"] == 4


#: Two cases that answer at once and two whose model takes ``SLOW_DELAY`` seconds to answer.
MIXED_PACK = PACK.replace('"What is six times seven?"', '"zebra-fast: what is six times seven?"').replace(
    '"What is forty-two in digits?"', '"zebra-fast: forty-two in digits?"').replace(
    '"Say 42."', '"zebra-slow: say 42."').replace('"Answer 42."', '"zebra-slow: answer 42."')
SLOW_DELAY = 45


def _mixed_script(path: Path, slow_delay: float) -> str:
    rules = [{"match": "zebra-slow", "text": "FINAL(42)", "delay": slow_delay}, {"match": ".", "text": "FINAL(42)"}]
    path.write_text(json.dumps({"rules": rules}))
    return f"scripted:{path}"


def _ends(trajectory: Path) -> tuple[str, Any]:
    """(which kind of case it ran, how its run ended: the last record's termination_reason or None)."""
    text = trajectory.read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    try:
        last = json.loads(lines[-1]) if lines else {}
    except ValueError:  # being written
        last = {}
    reason = (last.get("data") or {}).get("termination_reason") if last.get("type") == "final" else None
    return ("slow" if "zebra-slow" in text else "fast"), reason


@pytest.mark.slow
def test_ctrl_c_cancels_running_cases_through_the_flag_keeps_finished_ones_and_resume_finishes(cluster, place):
    """(c) SIGINT while two quick cases of each repeat have finished and two slow ones (a model call of
    ``SLOW_DELAY`` s) run: the driver raises the cancel flag (an actor; no ray.cancel), the running cases stop at
    once (their runs end ``cancelled``; the driver, which waits up to 30 s for them, exits within seconds) and
    are not saved; exit 130 with the resume command, the finished cases kept; --resume runs the rest, every case
    once."""
    folder, home = place["folder"], place["home"]
    (folder / "pack.yaml").write_text(MIXED_PACK)
    script = folder / "mixed.json"
    sweep = _sweep_file(folder, "interrupted", _mixed_script(script, SLOW_DELAY), repeat=2)
    process = place["start"]("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address, "-q")
    runs = home / "runs"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:  # the fast cases saved, every slow run started
        kinds = [_ends(path)[0] for path in runs.glob("*.jsonl")] if runs.is_dir() else []
        if len(_saved(home)) == 4 and kinds.count("slow") == 4:
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()[1][-3000:]
    assert len(_saved(home)) == 4 and kinds.count("slow") == 4, (len(_saved(home)), kinds)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=90)
    stopped_after = time.monotonic() - interrupted
    assert process.returncode == 130, err[-3000:]
    assert stopped_after < 25, f"the running cases took {stopped_after:.1f} s to stop: {err[-2000:]}"
    sweep_id = next(home.glob("sweeps/*.json")).stem
    assert f"rlm bench sweep --resume {sweep_id}" in err
    record = _record(home, sweep_id)
    assert record["status"] == "interrupted"
    kept = [json.loads(p.read_text()) for p in _saved(home)]
    assert len(kept) == 4 and all(r["status"] == "completed" and r["case_id"] in ("a", "b") for r in kept), kept
    ends = sorted(_ends(path) for path in runs.glob("*.jsonl"))
    assert ends == [("fast", "final")] * 4 + [("slow", "cancelled")] * 4, ends

    _mixed_script(script, 0)  # the rest answers at once now
    done = place["rlm"]("bench", "sweep", "--resume", sweep_id, "--executor", "ray", "--address", cluster.address,
                        "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["status"] == "finished"
    _assert_complete(home, record)
    assert len(_saved(home)) == 8


def _kill_raylet_once_it_runs_a_case(node: Any, process: subprocess.Popen, timeout: float = 60) -> None:
    """Wait until a case runs on ``node`` (a worker titled ``ray::ray_case``), then SIGKILL the node's raylet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1][-3000:]
        for pid in node.pids():
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::ray_case"):
                    os.kill(node.raylet_pid(), signal.SIGKILL)
                    return
            except OSError:
                continue
        time.sleep(0.1)
    raise AssertionError(f"no case ran on {node.name} within {timeout} s")


@pytest.mark.slow
def test_a_node_killed_mid_sweep_has_its_cases_rescheduled(cluster, place):
    """(b) a node dies while it runs cases: Ray reruns them elsewhere (max_retries) and the sweep finishes."""
    victim = cluster.add_node("node3", resources={"node3": 1}, env={"RLM_PLUGINS": PLUGINS})
    folder, home = place["folder"], place["home"]
    sweep = _sweep_file(folder, "rescheduled", _script(folder / "slow.json", 2.0), repeat=3, ray="max_retries = 2")
    process = place["start"]("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address,
                             "--json", "-q")
    try:
        _kill_raylet_once_it_runs_a_case(victim, process)
        out, err = process.communicate(timeout=120)
    finally:
        victim.stop()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err[-3000:]
    record = json.loads(out)
    assert record["status"] == "finished"
    _assert_complete(home, record)
    assert "ray: " in err  # Ray's word about the dead node, on stderr (stdout stays the JSON record)


@pytest.mark.slow
def test_a_node_killed_without_retries_reports_its_cases_lost_with_the_resume_command(cluster, place):
    """(b) with max_retries = 0 the dead node's cases are lost: exit 1, the resume command; --resume finishes."""
    victim = cluster.add_node("node4", resources={"node4": 1}, env={"RLM_PLUGINS": PLUGINS})
    victim_id = _node_names(cluster)["node4"]
    folder, home = place["folder"], place["home"]
    sweep = _sweep_file(folder, "lost", _script(folder / "slow.json", 2.0), repeat=3, ray="max_retries = 0")
    process = place["start"]("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address, "-q")
    try:
        _kill_raylet_once_it_runs_a_case(victim, process)
        _, err = process.communicate(timeout=120)
    finally:
        victim.stop()
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err[-3000:]
    sweep_id = next(home.glob("sweeps/*.json")).stem
    record = _record(home, sweep_id)
    assert record["status"] == "lost" and "lost" in record["stopped"]
    assert f"rlm bench sweep --resume {sweep_id}" in err
    assert "NodeDiedError" in record["stopped"] and victim_id in record["stopped"], record["stopped"]  # names it
    assert len(_saved(home)) < 12

    done = place["rlm"]("bench", "sweep", "--resume", sweep_id, "--executor", "ray", "--address", cluster.address,
                        "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["status"] == "finished"
    _assert_complete(home, record)


@pytest.mark.slow
def test_joining_without_the_clusters_token_is_one_clear_error(cluster, place, tmp_path):
    """The cluster wants a token and this driver has none (a fresh HOME, no RAY_AUTH_*): exit 2, how to fix it."""
    (tmp_path / "tokenless").mkdir()
    sweep = _sweep_file(place["folder"], "tokenless", _script(place["folder"] / "s.json", 0))
    # RAY_NUM_REDIS_GET_RETRIES: Ray tries to join 20 times, 1 s apart, even when refused
    env = {**place["env"], "HOME": str(tmp_path / "tokenless"), "RAY_NUM_REDIS_GET_RETRIES": "2"}
    started = time.monotonic()
    done = subprocess.run([RLM_SCRIPT, "bench", "sweep", str(sweep), "--executor", "ray", "--address",
                           cluster.address, "-q"], cwd=place["folder"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"Ray cluster at {cluster.address}" in done.stderr and "ray get-auth-token" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "tokenless" / ".ray").exists()  # joining never writes a token
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_a_node_without_rlm_bench_fails_its_cases_naming_the_node(cluster, place, tmp_path):
    """A node whose Python cannot import rlm_bench (here: a package of that name shadowing it on the node's
    PYTHONPATH): the case's task fails before ``run_item`` runs, and the case is an error naming the node."""
    shadow = tmp_path / "shadow" / "rlm_bench"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('rlm-bench is not installed on this node')\n")
    bare = cluster.add_node("node5", resources={"node5": 1},
                            env={"RLM_PLUGINS": "", "PYTHONPATH": str(shadow.parent)})
    try:
        folder, home = place["folder"], place["home"]
        sweep = _sweep_file(folder, "bare", _script(folder / "s.json", 0), ray="resources = {node5 = 0.01}")
        done = place["rlm"]("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.address,
                            "--json", "-q")
    finally:
        bare.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in _saved(home)]
    assert len(results) == 4
    for result in results:
        assert result["status"] == "error" and result["error"].startswith("on node "), result
        assert "rlm-bench is not installed on this node" in result["error"]


@pytest.mark.slow
def test_a_driver_joins_through_ray_client(cluster, place):
    """``--address ray://HOST:PORT`` (Ray Client, through the head's client server) runs the sweep the same way."""
    folder, home = place["folder"], place["home"]
    sweep = _sweep_file(folder, "client", _script(folder / "s.json", 0), ray="resources = {head = 0.01}")
    done = place["rlm"]("bench", "sweep", str(sweep), "--executor", "ray", "--address", cluster.client_address,
                        "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(done.stdout)
    assert record["status"] == "finished"
    assert [name.split("/")[-1] for name in record["nodes"]] == [_node_names(cluster)["head"]]
    _assert_complete(home, record)
