"""What a step costs in the monty sandbox, and what the context costs once.

Prints: session start; a trivial execute; an execute touching the context at 1 KB and 10 MB (it must stay
flat: the context is sent once); set_variable of 10 MB and 100 MB strings; one host-function round trip; and
the restart after a timeout with a 10 MB context restored.

    .venv/bin/python benchmarks/sandbox_monty.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rlm_host.sandbox.protocol import SandboxLimits
from rlm_sandbox_monty.runtime import MontySandbox


def median_ms(action, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        timings.append(time.perf_counter() - started)
    return statistics.median(timings) * 1000


def once_ms(action) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    session = MontySandbox(limits=SandboxLimits(exec_timeout=5, memory_mb=2048))
    print(f"session start (pool + worker + checkout): {once_ms(session.start):8.2f} ms")
    trivial = median_ms(lambda: session.execute("x = 1"), args.repeat)
    print(f"trivial execute ('x = 1'):                {trivial:8.3f} ms")
    for label, size in (("1 KB", 1_000), ("10 MB", 10_000_000)):
        session.set_variable("context", "x" * size)
        step = median_ms(lambda: session.execute("n = len(context)\ny = context[:100]"), args.repeat)
        print(f"execute touching a {label:>5} context:       {step:8.3f} ms")
    for label, size in (("10 MB", 10_000_000), ("100 MB", 100_000_000)):
        value = "x" * size
        cost = once_ms(lambda value=value: session.set_variable("big", value))
        print(f"set_variable of a {label:>6} string:        {cost:8.1f} ms")
        session.set_variable("big", "")
    session.register_functions({"echo": lambda v: v})
    calls = median_ms(lambda: session.execute("for i in range(100):\n    echo(i)"), max(10, args.repeat // 10))
    print(f"host-function round trip:                 {calls / 100:8.3f} ms")
    session.set_variable("context", "x" * 10_000_000)
    restart = once_ms(lambda: session.execute("while True:\n    pass", timeout=0.2)) - 200
    print(f"timeout restart, 10 MB context restored:  {restart:8.1f} ms (beyond the 0.2 s limit)")
    session.shutdown()


if __name__ == "__main__":
    main()
