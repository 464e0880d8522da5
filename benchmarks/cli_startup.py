"""How fast does ``rlm`` start? Prints median and p90 wall time of the commands a user types most.

Measured with every plugin of the environment installed, then with two healthy test plugins added (what an
extra plugin costs), then with the four broken test plugins too (for information: each logs a warning). Figures are also given
as a ratio to a bare ``python -c pass`` start, which is steadier than seconds on a noisy machine.

    .venv/bin/python benchmarks/cli_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RLM = str(Path(sys.executable).with_name("rlm"))
COMMANDS = [["--help"], ["--version"], ["plugins", "list"], ["plugins", "list", "--json"]]
TARGET_SECONDS = 0.3


def timed(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    subprocess.run(argv, env=env, capture_output=True)  # warm the file cache and .pyc files
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True)
        samples.append(time.perf_counter() - start)
    return samples


def p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def report(label: str, env: dict[str, str], runs: int, baseline: float) -> bool:
    listed = subprocess.run([RLM, "--version"], env=env, capture_output=True, text=True).stdout.splitlines()
    print(f"\n{label}: {len(listed) - 1} plugin distribution(s) installed")
    print(f"  {'command':<28}{'median s':>10}{'p90 s':>10}{'x python':>10}")
    ok = True
    for args in COMMANDS:
        samples = timed([RLM, *args], env, runs)
        median = statistics.median(samples)
        ok &= median < TARGET_SECONDS
        print(f"  {'rlm ' + ' '.join(args):<28}{median:>10.3f}{p90(samples):>10.3f}{median / baseline:>10.1f}")
    return ok


def install(site: str, projects: list[Path]) -> None:
    command = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", site]
    subprocess.run([*command, *map(str, projects)], check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_") and k != "PYTHONPATH"}

    baseline = statistics.median(timed([sys.executable, "-c", "pass"], env, runs))
    print(f"python -c pass: median {baseline:.3f} s over {runs} runs (the unit of the 'x python' column)")
    ok = report("this environment", env, runs, baseline)

    test_plugins = REPO / "tests" / "plugins"
    healthy = [test_plugins / "rlm-test-good", REPO / "plugins" / "_template"]
    broken = [p for p in test_plugins.iterdir() if (p / "pyproject.toml").exists() and p.name != "rlm-test-good"]
    with tempfile.TemporaryDirectory() as site:
        install(site, healthy)
        ok &= report("with two healthy test plugins added", {**env, "PYTHONPATH": site}, runs, baseline)
        install(site, broken)
        print("\n(information, no target: broken plugins log a warning each, which loads structlog)")
        report("with four broken test plugins added too", {**env, "PYTHONPATH": site}, runs, baseline)
    verdict = "meets" if ok else "MISSES"
    print(f"\nevery median {verdict} the {TARGET_SECONDS} s target")


if __name__ == "__main__":
    main()
