"""Does the engine's own time per step stay flat as the context grows?

Runs the same 4-step pure_rlm task (look at the context, search it, one llm_query, FINAL) over haystacks of
1 KB, 1 MB, 10 MB and 100 MB with a scripted model (no network, ~0 model time), in every installed sandbox
runtime. Per step it reports wall time minus model time (the engine + sandbox overhead), and separately the
one-off session start (the context entering the sandbox once).

    .venv/bin/python benchmarks/engine_overhead.py [--sizes 1e3,1e6,1e7,1e8] [--sandboxes process,monty] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rlm_host.config import load_settings
from rlm_host.engine.runner import RLMRunner
from rlm_host.llm.scripted import ScriptedConnector
from rlm_host.plugins import get_host

STEPS = [
    "```repl\nprint(type(context).__name__, len(context))\nprint(context[:80])\n```",
    "```repl\nidx = context.find('magic number')\nprint(idx, context[idx:idx+40])\n```",
    "```repl\nanswer = llm_query('Extract the number from: ' + context[idx:idx+40])\nprint(answer)\n```",
    "FINAL_VAR(answer)",
]
NEEDLE = "The magic number is 4217."


def haystack(chars: int) -> str:
    filler = "the quick brown fox jumps over the lazy dog "
    body = filler * (chars // len(filler) + 1)
    return body[: chars // 2] + NEEDLE + body[: chars - chars // 2]


def measure(runner: RLMRunner, sandbox: str, context: str) -> tuple[float, float, float]:
    """(median engine seconds per step, session start seconds, total seconds) of one run."""
    events = []
    root = ScriptedConnector.from_responses(STEPS)
    sub = ScriptedConnector.from_responses([], rules=[{"match": ".", "text": "4217"}])
    started = time.perf_counter()
    result = runner.run_task("What is the magic number?", context=context, sandbox=sandbox,
                             connectors={"root": root, "sub": sub}, on_event=events.append)  # fmt: skip
    total = time.perf_counter() - started
    if result.final_response != "4217":
        raise SystemExit(f"{sandbox}: wrong answer {result.final_response!r} ({result.termination_reason}: {result.error})")
    steps = [e.data for e in events if e.type == "step"]
    engine = [s["duration_s"] - s["model_seconds"] for s in steps]
    start = total - sum(s["duration_s"] for s in steps)  # session start (context in) and shutdown
    return statistics.median(engine), start, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e6,1e7,1e8")
    parser.add_argument("--sandboxes", default="")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    host = get_host()
    available = [spec.name for spec in host.sandboxes() if spec.readiness().ok]
    sandboxes = [s for s in (args.sandboxes.split(",") if args.sandboxes else available) if s in available]
    with tempfile.TemporaryDirectory() as home:
        loaded = load_settings(host=host, environ={"HOME": home}, cwd=Path(home))
        runner = RLMRunner(loaded=loaded, host=host, home=Path(home))
        loaded.settings.run.sinks = []
        print(f"{'sandbox':<9}{'context':>10}{'engine ms/step':>16}{'x 1 KB':>8}{'start+stop s':>17}{'run s':>8}")
        for sandbox in sandboxes:
            baseline = None
            for size in sizes:
                context = haystack(size)
                runs = [measure(runner, sandbox, context) for _ in range(args.repeat)]
                engine = statistics.median(r[0] for r in runs) * 1000
                start = statistics.median(r[1] for r in runs)
                total = statistics.median(r[2] for r in runs)
                baseline = baseline or engine
                print(f"{sandbox:<9}{_size(size):>10}{engine:>16.2f}{engine / baseline:>8.2f}{start:>17.3f}{total:>8.2f}")
                sys.stdout.flush()


def _size(chars: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if chars >= scale:
            return f"{chars / scale:g} {unit}"
    return f"{chars} B"


if __name__ == "__main__":
    main()
