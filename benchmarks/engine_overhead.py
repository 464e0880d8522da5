"""Does the engine's own time per step stay flat as the context grows?

Runs the same 4-step pure_rlm task (look at the context, search it, one llm_query, FINAL) over haystacks of
1 KB, 1 MB, 10 MB and 100 MB with a scripted model (no network, ~0 model time), in every installed sandbox
runtime. Per step it reports wall time minus model time (the engine + sandbox overhead), and separately the
one-off session start (the context entering the sandbox once).

    .venv/bin/python benchmarks/engine_overhead.py [--sizes 1e3,1e6,1e7,1e8] [--sandboxes process,monty] [--repeat 3]

``--live-cost`` measures instead what the live events (step_start, model_call_*, code_*, sub_call_start…) add to a
step: a 41-step run over 1 KB, alternately with the live events and with them dropped before the bus (as before
they existed), ``--repeat`` pairs; it prints the wall time and the process's CPU time per step of each (the CPU
time is the steadier figure on a busy machine: waiting is not counted) and their ratio.
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
from rlm_host.models.scripted import ScriptedConnector
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
                             connectors={"root": root, "sub": sub}, on_event=events.append)
    total = time.perf_counter() - started
    if result.final_response != "4217":
        raise SystemExit(f"{sandbox}: wrong answer {result.final_response!r} ({result.termination_reason}: "
                         f"{result.error})")
    steps = [e.data for e in events if e.type == "step"]
    engine = [s["duration_s"] - s["model_seconds"] for s in steps]
    start = total - sum(s["duration_s"] for s in steps)  # session start (context in) and shutdown
    return statistics.median(engine), start, total


LONG_STEP = "```repl\nidx = context.find('magic number')\nprint(idx)\n```"


def live_cost(runner: RLMRunner, sandbox: str, repeat: int) -> None:
    """Wall time per step with and without the live events, interleaved so the machine's drift hits both."""
    from rlm_host.engine.scope import RunScope
    from rlm_host.event_types import LIVE_EVENT_TYPES

    emit = RunScope.emit

    def without_live(self, type_, data):
        return None if type_ in LIVE_EVENT_TYPES else emit(self, type_, data)

    def one_run() -> tuple[float, float]:
        root = ScriptedConnector.from_responses([LONG_STEP] * 40 + ["FINAL(4217)"])
        started, cpu = time.perf_counter(), time.process_time()
        runner.run_task("q", context=haystack(1000), sandbox=sandbox, connectors={"root": root, "sub": root},
                        max_steps=41)
        return (time.perf_counter() - started) / 41, (time.process_time() - cpu) / 41

    timings: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    one_run()  # warm: imports, the worker
    for _ in range(repeat):
        for live in (True, False):
            RunScope.emit = emit if live else without_live  # type: ignore[method-assign]
            try:
                timings[live].append(one_run())
            finally:
                RunScope.emit = emit  # type: ignore[method-assign]
    for i, what in ((0, "wall"), (1, "cpu")):
        with_live, without = (statistics.median(t[i] for t in timings[k]) * 1000 for k in (True, False))
        print(f"{sandbox + ' ' + what:<13}{with_live:>14.3f}{without:>17.3f}{with_live - without:>12.3f}"
              f"{with_live / without:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e3,1e6,1e7,1e8")
    parser.add_argument("--sandboxes", default="")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--live-cost", action="store_true", help="what the live events add to a step")
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    host = get_host()
    available = [spec.name for spec in host.sandboxes() if spec.readiness().ok]
    sandboxes = [s for s in (args.sandboxes.split(",") if args.sandboxes else available) if s in available]
    with tempfile.TemporaryDirectory() as home:
        loaded = load_settings(host=host, environ={"HOME": home}, cwd=Path(home))
        runner = RLMRunner(loaded=loaded, host=host, home=Path(home))
        loaded.settings.run.sinks = []
        if args.live_cost:
            print(f"{'sandbox':<13}{'ms/step live':>14}{'ms/step without':>17}{'delta ms':>12}{'ratio':>8}")
            for sandbox in sandboxes:
                live_cost(runner, sandbox, max(args.repeat, 5))
            return
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
                print(f"{sandbox:<9}{_size(size):>10}{engine:>16.2f}{engine / baseline:>8.2f}"
                      f"{start:>17.3f}{total:>8.2f}")
                sys.stdout.flush()


def _size(chars: int) -> str:
    for unit, scale in (("MB", 1_000_000), ("KB", 1_000)):
        if chars >= scale:
            return f"{chars / scale:g} {unit}"
    return f"{chars} B"


if __name__ == "__main__":
    main()
