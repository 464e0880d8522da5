"""Print the docker sandbox's figures: container start, trivial execute, context set-up, restart, shutdown.

Run with an engine and the image available: ``python plugins/rlm-sandbox-docker/benchmarks/measure.py``.
Measures only; asserts nothing.
"""

from __future__ import annotations

import statistics
import time

from rlm_host.sdk.sandbox import SandboxLimits

from rlm_sandbox_docker.runtime import DockerSandbox


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def main() -> None:
    first = DockerSandbox()
    print(f"first session start (connect, image check, sweep, container): {timed(first.start) * 1000:.0f} ms")
    first.shutdown()
    starts, stops = [], []
    for _ in range(5):
        session = DockerSandbox()
        starts.append(timed(session.start))
        stops.append(timed(session.shutdown))
    print(f"container start (create + attach + start + ready), median of 5: {statistics.median(starts) * 1000:.0f} ms")
    print(f"shutdown (container removed), median of 5: {statistics.median(stops) * 1000:.0f} ms")
    session = DockerSandbox(limits=SandboxLimits(memory_mb=2048, exec_timeout=2))
    session.start()
    for label, size in (("1 KB", 1_000), ("10 MB", 10_000_000), ("100 MB", 100_000_000)):
        value = "x" * size
        setup = timed(lambda value=value: session.set_variable("context", value))
        samples = [timed(lambda: session.execute("x = 1")) for _ in range(50)]
        print(f"context {label}: set-up {setup * 1000:.0f} ms; trivial execute median "
              f"{statistics.median(samples) * 1000:.2f} ms; len(context) "
              f"{timed(lambda: session.execute('n = len(context)')) * 1000:.2f} ms")
    restart = timed(lambda: session.execute("while True: pass", timeout=0.5)) - 0.5
    print(f"timeout restart with the 100 MB context restored: {restart * 1000:.0f} ms (after the 0.5 s limit)")
    session.register_functions({"echo": lambda v: v})
    calls = timed(lambda: session.execute("for i in range(1000):\n    echo(i)")) / 1000
    print(f"host function call round trip: {calls * 1000:.3f} ms")
    session.shutdown()


if __name__ == "__main__":
    main()
