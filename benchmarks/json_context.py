"""What does a large JSON context cost the engine per run and per step?

A JSON context is described (type, size, keys, preview) for the prompt and the trajectory; describing it means
serialising it. This runs the same 4-step task in the ``generic`` and ``pure_rlm`` environments over JSON
objects of 1, 10 and 50 MB with a scripted model in the ``process`` sandbox, and prints the engine's time per
step (wall minus model time) and the time before the first step (planning, the context's description, the
sandbox session receiving the context).

    .venv/bin/python benchmarks/json_context.py [--sizes 1e6,1e7,5e7] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rlm_host import RLMRunner, get_host, load_settings
from rlm_host.testing import ScriptedConnector

STEPS = {
    "generic": ['{"action": "run_python", "code": "print(len(context))"}',
                '{"action": "run_python", "code": "print(sorted(context)[:3])"}',
                '{"action": "run_python", "code": "x = context[\'k1\']\\nprint(len(x))"}',
                '{"action": "final", "final_response": "done"}'],
    "pure_rlm": ["```repl\nprint(len(context))\n```", "```repl\nprint(sorted(context)[:3])\n```",
                 "```repl\nx = context['k1']\nprint(len(x))\n```", "FINAL(done)"],
}


def json_context(chars: int) -> dict[str, str]:
    """A JSON object of about ``chars`` characters: 1,000 keys of equal text values."""
    value = "lorem ipsum dolor sit amet " * (chars // 1000 // 27 + 1)
    return {f"k{i}": value[: chars // 1000] for i in range(1000)}


def measure(runner: RLMRunner, environment: str, context: dict) -> tuple[float, float]:
    """(median engine seconds per step, seconds before the first step) of one run."""
    events: list = []
    root = ScriptedConnector.from_responses(STEPS[environment])
    started = time.time()  # events carry time.time() stamps
    result = runner.run_task("Look at the context.", context=context, sandbox="process", environment=environment,
                             connectors={"root": root, "sub": root}, on_event=events.append)
    if result.final_response != "done":
        raise SystemExit(f"{environment}: {result.termination_reason}: {result.error}")
    steps = [e for e in events if e.type == "step"]
    before_first = steps[0].ts - steps[0].data["duration_s"] - started
    return statistics.median(e.data["duration_s"] - e.data["model_seconds"] for e in steps), before_first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7,5e7")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    host = get_host()
    with tempfile.TemporaryDirectory() as home:
        loaded = load_settings(host=host, environ={"HOME": home, "RLM_RUN__SINKS": "[]"}, cwd=Path(home))
        runner = RLMRunner(loaded=loaded, host=host, home=Path(home))
        print(f"{'environment':<12}{'context':>10}{'engine ms/step':>16}{'before step 1 s':>17}")
        for environment in STEPS:
            for size in (int(float(s)) for s in args.sizes.split(",")):
                context = json_context(size)
                runs = [measure(runner, environment, context) for _ in range(args.repeat)]
                step_ms = statistics.median(r[0] for r in runs) * 1000
                start = statistics.median(r[1] for r in runs)
                print(f"{environment:<12}{size / 1e6:>8g} MB{step_ms:>16.2f}{start:>17.3f}", flush=True)


if __name__ == "__main__":
    main()
