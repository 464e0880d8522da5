"""Index build speed, peak memory, and view/search latency on a generated trace file of a given size.

    python benchmarks/index_speed.py 1G [--format flat|otlp|mixed] [--dir DIR]

Generates the file (not timed), builds its sidecar index in one pass (timed: MB/s), reloads the stored index,
then times ``view_trace`` and ``search_trace`` on traces spread through the file (and what reusing the stored
index costs: fingerprint, signature, decode, checks). Peak RSS is the process's
high-water mark (generation streams, so it is the index's), and that of the largest worker process of a
parallel build.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlm_env_traces.generate import generate
from rlm_env_traces.index import build
from rlm_env_traces.store import TraceStore

SAMPLES = 50


def size_of(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", help="file size: bytes, or 200M, 1G …")
    parser.add_argument("--format", default="flat", choices=("flat", "otlp", "mixed"))
    parser.add_argument("--dir", type=Path, default=None, help="where the file goes (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / f"bench.{args.format}.jsonl"
        started = time.perf_counter()
        info = generate(path, size_bytes=size_of(args.size), fmt=args.format)
        print(f"generated {info['bytes'] / 1e6:,.0f} MB, {info['traces']:,} traces in "
              f"{time.perf_counter() - started:.1f}s")
        os.sync()  # the generator's dirty pages written back now, not during the timed build
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        started = time.perf_counter()
        index = build(path)
        seconds = time.perf_counter() - started
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        workers_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"index build: {seconds:.2f}s = {path.stat().st_size / 1e6 / seconds:,.0f} MB/s "
              f"({index.spans:,} spans, {len(index.traces):,} traces)")
        print(f"peak RSS: {rss:,.0f} MB (before the build: {rss_before:,.0f} MB); "
              f"largest index worker: {workers_rss:,.0f} MB")
        TraceStore.load(path)  # builds the index again and stores it next to the file
        started = time.perf_counter()
        store = TraceStore.load(path)
        print(f"stored index: {store.index_path.stat().st_size / 1e6:,.1f} MB, "
              f"loaded for reuse in {(time.perf_counter() - started) * 1000:,.0f} ms")
        print("  of which: " + ", ".join(f"{name} {ms:,.0f} ms" for name, ms in _load_parts(path, store)))
        print(f"a fresh process holding the stored index: {_loaded_rss(path):,.0f} MB RSS "
              f"({len(store.index.traces):,} traces, {len(store.index.name_sets)} name sets)")
        ids = random.Random(1).sample(list(store.index.traces), min(SAMPLES, len(store.index.traces)))
        for name, call in (("view_trace", lambda t: store.view_trace(t)),
                           ("search_trace", lambda t: store.search_trace(t, "web_search"))):
            timings = []
            for trace_id in ids:
                started = time.perf_counter()
                call(trace_id)
                timings.append((time.perf_counter() - started) * 1000)
            print(f"{name}: median {statistics.median(timings):.2f} ms, max {max(timings):.2f} ms over {len(ids)} "
                  "traces")


def _load_parts(path: Path, store: TraceStore) -> list[tuple[str, float]]:
    """What reusing a stored index costs, step by step: fingerprint the file, check the signature, decode, check
    every count and range."""
    import msgspec

    from rlm_env_traces import storage
    from rlm_env_traces.checks import problems
    from rlm_env_traces.index import TraceIndex

    found = path.stat()
    steps = {"fingerprint": lambda: storage.fingerprint(path, found),
             "signature": lambda: storage.unseal(store.index_path)}
    timings, payload = [], None
    for name, step in steps.items():
        started = time.perf_counter()
        payload = step()
        timings.append((name, (time.perf_counter() - started) * 1000))
    started = time.perf_counter()
    gc.disable()  # as the store decodes it
    index = msgspec.msgpack.decode(payload, type=TraceIndex)
    gc.enable()
    timings.append(("decode", (time.perf_counter() - started) * 1000))
    started = time.perf_counter()
    assert problems(index, found.st_size, False) is None
    timings.append(("checks", (time.perf_counter() - started) * 1000))
    return timings


def _loaded_rss(path: Path) -> float:
    """Resident memory (MB) of a new interpreter once it has loaded the stored index: what a run over the file
    holds. (Current, not peak, RSS: a forked child's peak counts its parent's.)"""
    code = ("import sys; from rlm_env_traces.store import TraceStore; store = TraceStore.load(sys.argv[1]); "
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmRSS:')))")
    kilobytes = subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True, text=True)
    return int(kilobytes.stdout) / 1024


if __name__ == "__main__":
    main()
