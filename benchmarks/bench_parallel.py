"""Does `rlm bench run -j N` keep N cases in flight, each with its own sandbox and trajectory?

A pack of ``--cases`` cases ("Return number i", answer i) runs against a loopback model server whose root model
answers every request after ``--latency`` seconds: first a code turn, then the final answer, so a case costs two
model calls and the ideal for N concurrent cases is ceil(cases / N) x 2 x latency. For each N the benchmark runs
through the real CLI (`rlm bench run --pack … -j N --json`) and prints the time from the first model request to
the last answer (server clock), beside that ideal, and whether every case was right; with ``--repeat R`` each N
runs R times and the median is shown with the range (a shared 2-core machine varies by ±10% from run to run).
On a 2-core machine the engine's own CPU per case (a sandbox session, the trajectory, scoring) is the floor at
high N.

    .venv/bin/python benchmarks/bench_parallel.py [--cases 200] [--latency 0.1] [--jobs 8,16,32] [--sandbox monty]
        [--processes P] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from loopback_llm import ROOT_MODEL, LoopbackLLM  # noqa: E402

RLM = str(Path(sys.executable).with_name("rlm"))
NUMBER = re.compile(r"Return number (\d+)")


def respond(body: dict) -> str:
    """A code turn first, then the case's answer (the conversation's length tells which)."""
    messages = body["messages"]
    number = next(m for m in (NUMBER.search(str(x.get("content"))) for x in messages) if m).group(1)
    if any(m["role"] == "assistant" for m in messages):
        return f"FINAL('{number}')"
    return f"```repl\nx = {number}\nprint(x)\n```"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--jobs", default="8,16,32")
    parser.add_argument("--sandbox", default="monty")
    parser.add_argument("--processes", default=None, help="passed to --processes (default: the CLI's choice)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per N; the median is shown")
    parser.add_argument("--all-plugins", action="store_true", help="every installed plugin (the local sink writes "
                        "each case's steps)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LoopbackLLM(root_latency=options.latency) as llm:
        work = Path(folder)
        pack = work / "numbers.jsonl"
        pack.write_text("".join(json.dumps({"id": f"case_{i}", "task": f"Return number {i}", "answer": str(i)}) + "\n"
                                for i in range(options.cases)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_"))}
        env.update(RLM_HOME=str(work / "home"), OPENAI_BASE_URL=llm.base_url)
        if not options.all_plugins:  # the default local sink left out: the engine alone
            env["RLM_PLUGINS"] = "rlm-bench,rlm-sandbox-monty"
        print(f"{options.cases} cases, 2 model calls each at {options.latency:g} s, sandbox {options.sandbox}")
        print(f"{'-j':>4} {'ideal s':>8} {'measured s':>11} {'ratio':>6}  target ≤ 1.2   accuracy  range of "
              f"{options.repeat}")
        for jobs in (int(j) for j in options.jobs.split(",")):
            ideal = math.ceil(options.cases / jobs) * 2 * options.latency
            measured, accuracy = [], []
            for _ in range(options.repeat):
                llm.respond_with(respond)
                done = subprocess.run([RLM, "bench", "run", "--pack", str(pack), "--model", f"openai:{ROOT_MODEL}",
                                       "--sandbox", options.sandbox, "-j", str(jobs), "-q", "--json",
                                       *(["--processes", options.processes] if options.processes else [])],
                                      cwd=work, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    print(f"{jobs:>4} failed: {done.stderr.strip()[-300:]}")
                    break
                accuracy.append(json.loads(done.stdout)["metrics"]["accuracy"])
                roots = llm.of_kind("root")
                measured.append(max(r.finish for r in roots) - min(r.arrival for r in roots))
            if not measured:
                continue
            median = statistics.median(measured)
            verdict = "ok" if median <= 1.2 * ideal else "OVER"
            spread = f"{min(measured) / ideal:.2f}-{max(measured) / ideal:.2f}" if len(measured) > 1 else ""
            print(f"{jobs:>4} {ideal:>8.2f} {median:>11.2f} {median / ideal:>6.2f}  {verdict:<12} {min(accuracy):>8.3f}"
                  f"  {spread}")


if __name__ == "__main__":
    main()
