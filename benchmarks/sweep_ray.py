"""What does running a sweep's cases as Ray tasks cost against the local executor, on the same cores?

Three figures, through the real CLI (``rlm bench sweep``) unless said otherwise:

1. **Scheduling overhead.** A sweep of ``--cases`` cases, each two scripted model calls of ``--latency`` seconds
   (a REPL step, then FINAL), run with ``--executor local -j N``, with ``--executor ray`` (a private local Ray
   started for the sweep) and with ``--executor ray --address`` (a one-node cluster already running on this
   machine, started by the benchmark), ``[bench.ray] max_in_flight = N`` and ``num_cpus = cores/N`` a case so N
   run at once on the same cores. The ideal is ceil(cases / N) × 2 × latency. Printed: each wall time, when the
   first and last case were saved, the throughput once running (cases a second after the first quarter), and
   the ratios to local (target ≤ 1.3).
2. **Start-up.** The wall time of a one-case sweep per executor (private Ray: starting it, its first worker
   process, stopping it; running cluster: joining, a worker for the sweep's job; local: nothing to start).
3. **Driver memory.** The driver's resident memory after ``--memory-cases`` finished cases. The cases come from
   a fake in-process executor that answers every item at once with a synthetic, realistic result (so the figure
   is the driver's own bookkeeping, store writes included, without Ray's or any model's memory); RSS is read from
   /proc before planning, after planning and after the run.

    .venv/bin/python benchmarks/sweep_ray.py [--cases 200] [--latency 0.1] [--jobs 8] [--sandbox monty]
        [--memory-cases 10000] [--skip-memory]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RLM = str(Path(sys.executable).with_name("rlm"))
PLUGINS = "rlm-bench,rlm-sink-local,rlm-sandbox-monty"


def write_pack(folder: Path, cases: int) -> Path:
    lines = ["presets:", "  numbers:", "    description: scripted cases", "    cases:"]
    lines += [f'      - {{case_id: case_{i}, task: "Return 42 (case {i}).", expected: "42", scorer: exact}}'
              for i in range(cases)]
    path = folder / "pack.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_sweep(folder: Path, name: str, model: str, sandbox: str, jobs: int, limit: int | None = None,
                repeat: int = 1) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(f"""[sweep]
name = "{name}"
presets = ["numbers"]
packs = ["pack.yaml"]
models = ["{model}"]
sandboxes = ["{sandbox}"]
repeat = {repeat}
{f"limit = {limit}" if limit else ""}

[run]
timeout = 120

[bench.ray]
num_cpus = {round((os.cpu_count() or 2) / jobs, 4)}
max_in_flight = {jobs}
max_retries = 0
""")
    return path


def run_sweep(folder: Path, sweep: Path, executor: str, jobs: int, home: Path,
              cluster: Any = None) -> tuple[float, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "RAY_"))}
    if cluster is not None:
        env = cluster.driver_env(**{k: v for k, v in env.items() if k != "HOME"})
    env.update(RLM_HOME=str(home), RLM_PLUGINS=PLUGINS, RLM_TRUST_CONFIG="1")  # the script's own sweep file
    args = [RLM, "bench", "sweep", str(sweep), "--executor", executor.split()[0], "--json", "-q"]
    if executor == "local":
        args += ["-j", str(jobs)]
    if cluster is not None:
        args += ["--address", cluster.address]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{executor} sweep failed ({done.returncode}): {done.stderr[-3000:]}")
    return wall, json.loads(done.stdout)


def start_cluster(root: Path) -> Any:
    """A running one-node Ray cluster on this machine's cores (the tests' helper: its own processes, temp dir,
    ports and token), for ``--executor ray --address``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plugins" / "rlm-bench" / "tests"))
    from bench_data.ray_cluster import LocalCluster

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "RAY_"))}
    cluster = LocalCluster(root, env)
    cluster.start(env={"RLM_PLUGINS": PLUGINS}, num_cpus=os.cpu_count() or 2)
    return cluster


def correct(home: Path) -> tuple[int, int]:
    results = [json.loads(p.read_text()) for p in home.glob("benchmarks/*/cases/*.json")]
    return sum(bool(r.get("correct")) for r in results), len(results)


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class FakeExecutor:
    """Answers every item at once with a result shaped like a real completed case (two steps, tokens, cost)."""

    name = "fake"

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._ready: list[tuple[int, dict[str, Any]]] = []
        self._next = 0

    def submit(self, item: dict[str, Any]) -> int:
        self._next += 1
        manifest = item.manifest
        result = {"case_id": item.case_id, "preset": manifest["preset"], "mode": "native",
                  "environment": "pure_rlm",
                  "model": manifest["model"], "sandbox": manifest["sandbox"] or "", "status": "completed",
                  "termination_reason": "final", "task": f"Return 42 ({item.case_id}).", "final_response": "42",
                  "expected": "42", "scorer": "exact", "score": 1.0, "correct": True, "steps": 2, "reward": 1.8,
                  "tokens": {"input": 1259, "output": 9, "total": 1268, "root": 1268, "sub": 0}, "llm_calls": 2,
                  "cost": 0.0001, "duration_s": 0.25, "run_id": f"run_{self._next:08d}",
                  "trajectory_path": None}
        node = f"10.0.0.{self._next % 4}/node{self._next % 4}"
        self._ready.append((self._next, {"result": result, "node": node}))
        return self._next

    def wait(self, handles: Any, timeout: float) -> list[tuple[int, dict[str, Any]]]:
        ready, self._ready = self._ready, []
        return ready

    def cancel(self, handles: Any) -> None:
        pass

    def close(self) -> None:
        pass


def driver_memory(folder: Path, cases: int, script: str) -> dict[str, float]:
    """Plan and run a sweep of ``cases`` cases (100-case preset × repeats) in this process with FakeExecutor."""
    from rlm_bench.sweep import SweepDriver, SweepStore, plan_sweep
    from rlm_bench.sweep.file import load_sweep
    from rlm_host.plugins import reset_host
    from rlm_host.sdk.embedding import RLMRunner, load_settings

    per_point = min(100, cases)
    write_pack(folder, per_point)
    sweep = write_sweep(folder, "memory", script, "process", 64, repeat=math.ceil(cases / per_point))
    os.environ.update(RLM_HOME=str(folder / "memory-home"), RLM_PLUGINS=PLUGINS)
    reset_host()
    os.chdir(folder)
    runner = RLMRunner(loaded=load_settings(cwd=folder))
    store = SweepStore(runner.home)
    before = rss_mb()
    plan = plan_sweep(load_sweep(sweep), sweep.resolve(), runner, executor="fake", trust=True)
    planned = rss_mb()
    started = time.perf_counter()
    record = SweepDriver(store, FakeExecutor()).run(plan)
    seconds = time.perf_counter() - started
    after = rss_mb()
    done = sum(s.cases for s in record.nodes.values())
    del plan
    import gc

    gc.collect()
    return {"cases": done, "before_mb": before, "planned_mb": planned, "after_mb": after, "released_mb": rss_mb(),
            "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--sandbox", default="monty")
    parser.add_argument("--memory-cases", type=int, default=10_000)
    parser.add_argument("--skip-memory", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        script = folder / "script.json"
        script.write_text(json.dumps({"responses": [
            {"text": "```repl\nx = 6 * 7\nprint(x)\n```", "delay": options.latency},
            {"text": "FINAL(42)", "delay": options.latency}]}))
        model = f"scripted:{script}"
        write_pack(folder, options.cases)
        ideal = math.ceil(options.cases / options.jobs) * 2 * options.latency
        print(f"{os.cpu_count()} cores; {options.cases} cases of 2 scripted model calls at {options.latency:g} s, "
              f"sandbox {options.sandbox}, {options.jobs} at once; ideal {ideal:.2f} s")
        startup, full, steady = {}, {}, {}
        cluster = None
        try:
            for executor in ("local", "ray", "ray --address"):
                if executor == "ray --address":
                    cluster = start_cluster(folder / "cluster")
                slug = executor.replace(" --", "-")
                one = write_sweep(folder, f"one-{slug}", model, options.sandbox, options.jobs, limit=1)
                startup[executor], _ = run_sweep(folder, one, executor, options.jobs, folder / f"home-one-{slug}",
                                                 cluster)
                sweep = write_sweep(folder, f"all-{slug}", model, options.sandbox, options.jobs)
                home = folder / f"home-{slug}"
                started = time.time()
                full[executor], record = run_sweep(folder, sweep, executor, options.jobs, home, cluster)
                right, total = correct(home)
                saved = sorted(p.stat().st_mtime - started for p in home.glob("benchmarks/*/cases/*.json"))
                half = len(saved) // 4
                steady[executor] = (len(saved) - half) / max(saved[-1] - saved[half - 1], 1e-9) if half else 0.0
                print(f"  {executor:<13}  one-case sweep {startup[executor]:5.2f} s   {options.cases}-case sweep "
                      f"{full[executor]:6.2f} s: first case saved at {saved[0]:5.2f} s, last at {saved[-1]:5.2f} s; "
                      f"{steady[executor]:.1f} cases/s after the first quarter ({right}/{total} right)")
        finally:
            if cluster is not None:
                cluster.stop()
        for executor in ("ray", "ray --address"):
            print(f"{executor} / local: wall {full[executor] / full['local']:.2f}x (target <= 1.3); "
                  f"throughput once running {steady['local'] / steady[executor]:.2f}x; start-up (one-case sweep) "
                  f"+{startup[executor] - startup['local']:.2f} s")
        if not options.skip_memory:
            (folder / "memory").mkdir()
            mem = driver_memory(folder / "memory", options.memory_cases, model)
            print(f"driver RSS, {mem['cases']} finished cases (fake in-process executor, real store writes): "
                  f"{mem['before_mb']:.0f} MB before planning, {mem['planned_mb']:.0f} MB planned, "
                  f"{mem['after_mb']:.0f} MB after the run (+{mem['after_mb'] - mem['before_mb']:.0f} MB; "
                  f"{(mem['after_mb'] - mem['before_mb']) * 1024 / max(mem['cases'], 1):.1f} KB a case); "
                  f"driver {mem['seconds']:.1f} s, {mem['seconds'] / max(mem['cases'], 1) * 1000:.2f} ms a case")


if __name__ == "__main__":
    main()
