"""``rlm`` with a barrier in front of the mlflow sink's benchmark lookup, so that processes started together make
their first search for the benchmark's parent run at the same moment (the race ``benchmark.py`` resolves).

    python barrier_rlm.py BARRIER_DIR COUNT rlm-arguments…

Each process drops a file named by its pid into BARRIER_DIR and waits (at most 60 s) until COUNT files are there,
then looks the parent run up as usual. Everything else is the ``rlm`` console script, run as is.
"""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

from rlm_sink_mlflow import benchmark


def main() -> None:
    folder, count = Path(sys.argv[1]), int(sys.argv[2])
    original = benchmark.BenchmarkRuns.parent

    def parent(self, *args, **kwargs):
        (folder / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(folder.iterdir())) < count and time.monotonic() < deadline:
            time.sleep(0.001)
        return original(self, *args, **kwargs)

    benchmark.BenchmarkRuns.parent = parent  # type: ignore[method-assign]
    rlm = str(Path(sys.executable).with_name("rlm"))
    sys.argv = [rlm, *sys.argv[3:]]
    runpy.run_path(rlm, run_name="__main__")


if __name__ == "__main__":
    main()
