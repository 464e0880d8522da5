"""Running a sweep: every case of every point handed to an executor, results kept by the driver alone.

The driver feeds a plan's cases (``rlm_bench.sweep.plan``) to an executor (``LocalExecutor`` here: threads or
worker processes; ``rlm_bench.sweep.ray_executor.RayExecutor``: Ray tasks on a cluster) at most ``capacity`` at a
time. Each finished case is saved at once in the bench store (``<home>/benchmarks``), so a sweep is resumable:
``--resume SWEEP_ID`` runs only the cases without a result. A point whose cases are all saved gets its summary, as
``rlm bench run`` writes one; the sweep's record (``rlm_bench.sweep.record``) says how it went.

Budgets: with ``max_cost`` / ``max_tokens`` no new case starts once the finished cases' spend reaches it (the
running ones finish). Ctrl-C cancels the cases in flight and keeps every finished one. A case an executor lost
(its node died and the retries were spent) is reported with the resume command.

``rlm bench run`` is a one-point sweep through the same driver and ``LocalExecutor`` (``Plan.one_point``,
``strict``): it keeps no sweep record, and its first case that cannot run stops it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol

from rlm_bench.shards import RunItem, Shards, worker_processes
from rlm_bench.store import _write_atomic
from rlm_bench.summary import CaseResult, build_summary
from rlm_bench.sweep.plan import Plan
from rlm_bench.sweep.record import NodeStats, SweepRecord, SweepStore
from rlm_bench.sweep.worker import SweepItem, run_item
from rlm_host import RlmError


class SweepInterrupted(RlmError):
    """The sweep stopped before every case finished; finished cases are saved."""

    exit_code = 130


# ---------------------------------------------------------------------------------------------------- executors


class Executor(Protocol):
    """Where cases run. ``submit`` starts one (``run_item(item)`` somewhere), ``wait`` returns the finished ones
    as ``(handle, outcome)`` — ``run_item``'s dict, or a ``CaseLost`` — within ``timeout`` seconds."""

    name: str
    capacity: int

    def submit(self, item: SweepItem) -> Any: ...

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Any]]: ...

    def cancel(self, handles: Iterable[Any]) -> None: ...

    def close(self) -> None: ...


@dataclass
class CaseLost:
    """A case no node could finish (its node died and the retries were spent, or the executor failed); ``error``:
    what its run raised, when it raised (a bad model name: nothing can run)."""

    reason: str
    error: Optional[BaseException] = None


class LocalExecutor:
    """This machine: ``concurrency`` cases at once, on threads of this process or shared by forked worker
    processes that each run theirs on threads (``rlm_bench.shards``; ``processes``: how many, None for one per
    core for every 8 cases at once, 1 for threads only). ``run(item, cancel)`` runs a case (default: ``run_item``);
    a run that raises KeyboardInterrupt was cancelled, one that raises anything else is a ``CaseLost`` carrying
    it. ``close`` cancels what still runs and waits for it."""

    name = "local"

    def __init__(self, concurrency: int = 4, processes: Optional[int] = 1, run: Optional[RunItem] = None) -> None:
        self.capacity = max(1, concurrency)
        self._run = run or run_item
        self._cancel = threading.Event()
        count = worker_processes(self.capacity, processes)
        self._shards = Shards(self._run, count, self.capacity) if count > 1 else None  # forked first: no thread yet
        self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="bench")

    def submit(self, item: SweepItem) -> Any:
        if self._shards is not None:
            return self._shards.submit(item)
        return self._pool.submit(self._run, item, self._cancel)

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Any]]:
        if self._shards is not None:
            return self._shards.wait(handles, timeout)
        done, _ = wait(list(handles), timeout=timeout, return_when=FIRST_COMPLETED)
        return [(future, _outcome(future)) for future in done]

    def cancel(self, handles: Iterable[Any]) -> None:
        self._cancel.set()  # threads: the running cases stop at their next check
        if self._shards is not None:
            self._shards.cancel()

    def close(self) -> None:
        self._cancel.set()
        if self._shards is not None:
            self._shards.close()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _outcome(future: Future) -> Any:
    try:
        return future.result()
    except (KeyboardInterrupt, CancelledError):
        return {"cancelled": True}
    except Exception as exc:  # noqa: BLE001 - the case could not run: the driver decides what that stops
        return CaseLost(f"{type(exc).__name__}: {exc}", exc)


# ---------------------------------------------------------------------------------------------------- the driver


@dataclass
class Progress:
    """What a progress display is told: totals, and each case as it starts and ends."""

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    spent: float = 0.0
    tokens: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


#: Told ("start" | "submitted" | "case" | "lost" | "summary" | "end", progress, the case's result or the point's
#: summary).
Listener = Callable[[str, Progress, Any], None]


class SweepDriver:
    """Feeds a plan's cases to an executor and keeps what comes back (see the module docstring). ``strict`` runs
    one benchmark (``rlm bench run``): no sweep record is kept, and the first case that cannot run (``CaseLost``)
    stops the others as Ctrl-C does and is the ``failure``."""

    def __init__(self, store: SweepStore, executor: Executor, *, max_cost: Optional[float] = None,
                 max_tokens: Optional[int] = None, listener: Optional[Listener] = None,
                 strict: bool = False) -> None:
        self.store, self.executor = store, executor
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self.listener = listener or (lambda *_: None)
        self.strict = strict
        self.progress = Progress()
        self.failure: Optional[CaseLost] = None
        self._stopping = self._interrupted = False

    def run(self, plan: Plan) -> SweepRecord:
        record, bench = plan.record, self.store.bench
        for manifest in plan.manifests.values():
            if not bench.manifest_path(manifest.benchmark_id).is_file():
                bench.write_manifest(manifest)
        self._save(record)
        progress = self.progress = Progress(total=sum(p.cases for p in record.points))
        progress.done = progress.total - plan.cases
        pending = deque(item for items in plan.items.values() for item in items)
        self._planned = {benchmark_id: len(items) for benchmark_id, items in plan.items.items()}
        self._remaining = dict(self._planned)
        for benchmark_id, left in self._remaining.items():  # finished before a crash, not yet summarised
            if left == 0 and not bench.summary_path(benchmark_id).is_file():
                self._summarise_if_complete(benchmark_id, plan)
        running: dict[Any, SweepItem] = {}
        lost: list[str] = []
        self.listener("start", progress, None)
        try:
            try:
                while (pending or running) and not self._stopping:
                    while pending and len(running) < self.executor.capacity and not self._over_budget(record):
                        item = pending.popleft()
                        running[self.executor.submit(item)] = item
                        progress.running = len(running)
                        self.listener("submitted", progress, None)
                    if not running:
                        break
                    for handle, outcome in self.executor.wait(list(running), timeout=0.5):
                        item = running.pop(handle)
                        progress.running = len(running)
                        self._finish(item, outcome, record, progress, plan, lost)
            except KeyboardInterrupt:
                self._stopping = self._interrupted = True
            if self._stopping:  # Ctrl-C, a case cancelled underneath, or (strict) one that could not run
                self.executor.cancel(list(running))
                deadline = time.monotonic() + 30
                while running and time.monotonic() < deadline:  # keep every case that still finishes
                    for handle, outcome in self.executor.wait(list(running), timeout=0.5):
                        self._finish(running.pop(handle), outcome, record, progress, plan, lost)
            if self._interrupted:
                record.status = "interrupted"
                self._save(record)
                raise SweepInterrupted(f"sweep {record.sweep_id} interrupted: {progress.done} of {progress.total} "
                                       "cases finished and saved",
                                       hint=f"resume it with: rlm bench sweep --resume {record.sweep_id}") from None
            record.status = "lost" if lost else "budget" if record.stopped else "finished"
            if lost:
                record.stopped = f"{len(lost)} case(s) lost: {lost[0]}"
        finally:
            self.executor.close()
        self._save(record)
        self.listener("end", progress, None)
        return record

    def _save(self, record: SweepRecord) -> None:
        if not self.strict:
            self.store.save(record)

    def _over_budget(self, record: SweepRecord) -> bool:
        if record.stopped is not None:
            return True
        if self.max_cost is not None and record.spent_cost >= self.max_cost:
            record.stopped = f"--max-cost ${self.max_cost:g} reached (${record.spent_cost:.4f} spent)"
        elif self.max_tokens is not None and record.spent_tokens >= self.max_tokens:
            record.stopped = f"--max-tokens {self.max_tokens} reached ({record.spent_tokens} spent)"
        return record.stopped is not None

    def _finish(self, item: SweepItem, outcome: Any, record: SweepRecord, progress: Progress, plan: Plan,
                lost: list[str]) -> None:
        self._remaining[item.benchmark_id] -= 1
        if isinstance(outcome, CaseLost):
            lost.append(f"{item.benchmark_id}/{item.case_id}: {outcome.reason}")
            progress.failed += 1
            self.listener("lost", progress, None)
            if self.strict and not self._stopping:
                self.failure, self._stopping = outcome, True
            return
        if outcome.get("cancelled"):
            if not self._stopping:  # cancelled underneath (Ctrl-C reached the case first): stop as Ctrl-C does
                self._stopping = self._interrupted = True
            return
        result = CaseResult.model_validate(outcome["result"])
        node = str(outcome.get("node") or "?")
        if outcome.get("trajectory") is not None and result.trajectory_path:
            result.trajectory_path = self._keep_trajectory(result, outcome["trajectory"])
        self.store.bench.save_case(item.benchmark_id, result)
        stats = record.nodes.setdefault(node, NodeStats())
        stats.cases += 1
        stats.failed += result.status == "error"
        stats.seconds = round(stats.seconds + result.duration_s, 4)
        record.spent_cost = round(record.spent_cost + (result.cost or 0.0), 6)
        record.spent_tokens += result.tokens.total
        progress.done += 1
        progress.failed += result.status == "error"
        progress.spent, progress.tokens = record.spent_cost, record.spent_tokens
        progress.per_node[node] = progress.per_node.get(node, 0) + 1
        self._summarise_if_complete(item.benchmark_id, plan)
        if progress.done % 20 == 0:
            self._save(record)
        self.listener("case", progress, result)

    def _keep_trajectory(self, result: CaseResult, text: str) -> str:
        """A trajectory shipped from another node, written under this home's runs (never over an existing one)."""
        name = Path(result.trajectory_path or "run.jsonl").name
        target = self.store.root.parent / "runs" / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(target, text)
        return str(target)

    def _summarise_if_complete(self, benchmark_id: str, plan: Plan) -> None:
        """A point whose last case just finished gets its summary (read from the saved cases once)."""
        if self._remaining[benchmark_id] > 0:
            return
        manifest = plan.manifests[benchmark_id]
        results = self.store.bench.load_cases(benchmark_id)
        if all(c in results for c in manifest.case_ids):
            summary = build_summary(manifest, [results[c] for c in manifest.case_ids],
                                    resumed=len(manifest.case_ids) - self._planned[benchmark_id])
            self.store.bench.write_summary(summary)
            self.listener("summary", self.progress, summary)
