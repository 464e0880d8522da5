"""Does `rlm bench run -j N` keep N cases in flight, each with its own sandbox and trajectory?

A pack of ``--cases`` cases ("Return number i", answer i) runs against a loopback model server whose root model
answers every request after ``--latency`` seconds: first a code turn, then the final answer, so a case costs two
model calls and the ideal for N concurrent cases is ceil(cases / N) x 2 x latency. For each N the benchmark runs
through the real CLI (`rlm bench run --pack … -j N --json`) and prints the time from the first model request to
the last answer (server clock), beside that ideal, and whether every case was right. On a 2-core machine the
engine's own CPU per case (a sandbox started and stopped, the trajectory, scoring) is the floor at high N.

    .venv/bin/python benchmarks/bench_parallel.py [--cases 200] [--latency 0.1] [--jobs 8,16,32] [--sandbox monty]
        [--processes P]
"""

from __future__ import annotations

import argparse
import json
import math
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
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, LoopbackLLM(root_latency=options.latency) as llm:
        work = Path(folder)
        pack = work / "numbers.jsonl"
        pack.write_text("".join(json.dumps({"id": f"case_{i}", "task": f"Return number {i}", "answer": str(i)}) + "\n"
                                for i in range(options.cases)))  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_"))}
        env.update(RLM_HOME=str(work / "home"), OPENAI_BASE_URL=llm.base_url, RLM_PLUGINS="rlm-bench,rlm-sandbox-monty")
        print(f"{options.cases} cases, 2 model calls each at {options.latency:g} s, sandbox {options.sandbox}")
        print(f"{'-j':>4} {'ideal s':>8} {'measured s':>11} {'ratio':>6}  target ≤ 1.2   accuracy")
        for jobs in (int(j) for j in options.jobs.split(",")):
            llm.respond_with(respond)
            done = subprocess.run([RLM, "bench", "run", "--pack", str(pack), "--model", f"openai:{ROOT_MODEL}",
                                   "--sandbox", options.sandbox, "-j", str(jobs), "-q", "--json",
                                   *(["--processes", options.processes] if options.processes else [])], cwd=work,
                                  env=env, capture_output=True, text=True)  # fmt: skip
            if done.returncode != 0:
                print(f"{jobs:>4} failed: {done.stderr.strip()[-300:]}")
                continue
            accuracy = json.loads(done.stdout)["metrics"]["accuracy"]
            roots = llm.of_kind("root")
            measured = max(r.finish for r in roots) - min(r.arrival for r in roots)
            ideal = math.ceil(options.cases / jobs) * 2 * options.latency
            verdict = "ok" if measured <= 1.2 * ideal else "OVER"
            print(f"{jobs:>4} {ideal:>8.2f} {measured:>11.2f} {measured / ideal:>6.2f}  {verdict:<12} {accuracy:.3f}")


if __name__ == "__main__":
    main()
