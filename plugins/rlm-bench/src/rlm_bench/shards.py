"""Forked worker processes, the multi-process half of ``rlm_bench.sweep.LocalExecutor``: one Python process does
at most one core's worth of engine work (the GIL), so ``-j N`` with a large N shares the cases among workers that
each run theirs on threads of their own.

The workers are forked when the executor is made, while this process is still single-threaded (the only moment a
fork is safe), so they inherit the loaded plugins, settings and the function that runs a case, and start in
milliseconds. A case submitted goes to a worker with a free thread (or waits here for one); its outcome comes
back as it finishes, and only this process saves results. ``cancel`` (Ctrl-C, or a case that cannot run) sends
each worker a stop: it cancels its running cases, sends what finished, and exits, as it does when this process
dies. A worker that dies makes its running cases ``CaseLost``, naming them.

Linux only (fork); elsewhere, and from a process that already runs threads (a server embedding rlm-bench),
``worker_processes`` says 1 and the cases run on threads of this process.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import Pipe, connection
from typing import TYPE_CHECKING, Any, Callable, Optional

from rlm_host import RlmError

if TYPE_CHECKING:
    from rlm_bench.sweep.worker import SweepItem

#: Threads a worker process should have at least before another process pays off.
THREADS_PER_PROCESS = 8
#: Worker processes per core at most: two let the kernel share a core between bursts of cases that one
#: process's interpreter lock would run one at a time (``-j 32`` on 2 cores: 4 processes, 1.2x → 1.16x the ideal).
PROCESSES_PER_CORE = 2

RunItem = Callable[["SweepItem", threading.Event], Any]  # (item, cancel) -> outcome; raises when it cannot run


def worker_processes(concurrency: int, requested: Optional[int] = None) -> int:
    """How many processes run ``concurrency`` cases: ``requested`` when given (1 = threads only), else one for
    every ``THREADS_PER_PROCESS`` cases at once up to ``PROCESSES_PER_CORE`` per core, and 1 where workers cannot
    be forked safely."""
    if not sys.platform.startswith("linux") or threading.active_count() > 1:
        return 1
    if requested is not None:
        return max(1, min(requested, concurrency))
    cores = len(os.sched_getaffinity(0))
    return max(1, min(PROCESSES_PER_CORE * cores, concurrency // THREADS_PER_PROCESS))


@dataclass
class _Worker:
    pid: int
    control: Any  # this process sends (number, item) here, None to stop
    results: Any  # the worker sends (number, "done" | "cancelled" | "error", value) here
    threads: int
    running: set[int] = field(default_factory=set)


class Shards:
    """The worker processes of one executor, with an ``Executor``'s ``submit`` / ``wait`` / ``cancel`` / ``close``
    (a case's handle is its number)."""

    def __init__(self, run: RunItem, processes: int, concurrency: int) -> None:
        self.items: dict[int, SweepItem] = {}  # submitted, not finished
        self.waiting: deque[int] = deque()  # submitted, no worker free yet
        self.numbers = itertools.count()
        self.stopping = False
        self.workers: list[_Worker] = []
        for k in range(processes):
            threads = concurrency // processes + (1 if k < concurrency % processes else 0)
            self.workers.append(_fork(run, threads, self.workers))

    def submit(self, item: SweepItem) -> int:
        number = next(self.numbers)
        self.items[number] = item
        self.waiting.append(number)
        self._feed()
        return number

    def wait(self, handles: Any, timeout: float) -> list[tuple[int, Any]]:
        """The cases that finished within ``timeout`` seconds (any of this executor's)."""
        if self.waiting and (self.stopping or all(w.control.closed for w in self.workers)):  # no worker takes them
            out = [(n, {"cancelled": True} if self.stopping else _lost("no benchmark worker process is left"))
                   for n in self.waiting]
            self.waiting.clear()
            return out
        out, open_ = [], {w.results: w for w in self.workers if not w.results.closed}
        results: Any  # a worker's results end (typed Any there too): wait returns the ends it was given
        for results in connection.wait(list(open_), timeout) if open_ else []:
            try:
                while True:
                    number, kind, value = results.recv()
                    open_[results].running.discard(number)
                    self.items.pop(number, None)
                    if kind == "error":
                        error = RlmError(value[0], hint=value[1])
                        error.exit_code = value[2]
                        value = _lost(value[0], error)
                    out.append((number, {"cancelled": True} if kind == "cancelled" else value))
                    if not results.poll():
                        break
            except EOFError:
                out += self._ended(open_[results])
        self._feed()
        return out

    def cancel(self) -> None:
        """No more cases: each worker cancels what runs, sends what finished and exits."""
        self.stopping = True
        for worker in self.workers:
            try:
                if not worker.control.closed:
                    worker.control.send(None)
            except OSError:
                pass  # it ended already: nothing runs there
            worker.control.close()

    def close(self) -> None:
        """Cancel what still runs, and reap every worker."""
        if self.waiting or any(w.running for w in self.workers):
            self.cancel()
        for worker in self.workers:
            worker.control.close()  # the end of the cases: the worker exits once its cases are done
            worker.results.close()
            _reap(worker)

    def _feed(self) -> None:
        for worker in self.workers:
            while self.waiting and not self.stopping and not worker.control.closed and \
                    len(worker.running) < worker.threads:
                number = self.waiting.popleft()
                worker.running.add(number)
                try:
                    worker.control.send((number, self.items[number]))
                except OSError:  # the worker died (reported when its results end)
                    worker.control.close()

    def _ended(self, worker: _Worker) -> list[tuple[int, Any]]:
        worker.control.close()
        worker.results.close()
        status = _reap(worker)
        lost, worker.running = sorted(worker.running), set()
        names = ", ".join(item.case_id if (item := self.items.pop(n, None)) else str(n) for n in lost)
        if self.stopping:
            return [(n, {"cancelled": True}) for n in lost]
        how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
        return [(n, _lost(f"a benchmark worker process ended ({how}) while running case(s) {names}")) for n in lost]


def _lost(reason: str, error: Optional[BaseException] = None) -> Any:
    from rlm_bench.sweep.driver import CaseLost  # the executor protocol's (the driver imports this module)

    return CaseLost(reason, error)


def _reap(worker: _Worker) -> int:
    status, pid, worker.pid = 0, worker.pid, 0
    if pid:
        try:
            status = os.waitpid(pid, 0)[1]
        except ChildProcessError:
            pass
    return status


def _fork(run: RunItem, threads: int, siblings: list[_Worker]) -> _Worker:
    control, to_worker = Pipe(duplex=False)
    from_worker, results = Pipe(duplex=False)
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the parent's stack
        code = 1
        try:
            # the parent's ends of every pipe stay with the parent only, else a sibling's pipe never sees its end
            for end in (to_worker, from_worker, *(w.control for w in siblings), *(w.results for w in siblings)):
                end.close()
            _serve(run, threads, control, results)
            code = 0
        finally:
            os._exit(code)
    control.close()
    results.close()
    return _Worker(pid, to_worker, from_worker, threads)


def _serve(run: RunItem, threads: int, control: Any, results: Any) -> None:
    """The worker's loop: run each item read from ``control`` on a thread, answer on ``results``."""
    cancel, lock = threading.Event(), threading.Lock()

    def work(number: int, item: SweepItem) -> None:
        try:
            answer: tuple[Any, ...] = (number, "done", run(item, cancel))
        except KeyboardInterrupt:
            answer = (number, "cancelled", None)
        except BaseException as exc:  # an RlmError: nothing could run (a bad model name…), the benchmark stops
            error = exc if isinstance(exc, RlmError) else RlmError(f"{type(exc).__name__}: {exc}")
            answer = (number, "error", (error.message, error.hint, error.exit_code))
        with lock:  # one whole message at a time
            try:
                results.send(answer)
            except Exception as exc:  # noqa: BLE001 - it cannot be pickled (nothing was sent)
                results.send((number, "error", (f"a case's outcome cannot be sent: {exc}", "", 1)))

    parent, stopped = os.getppid(), False
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bench") as pool:
        try:
            while (message := control.recv()) is not None:
                pool.submit(work, *message)
            stopped = True
        except EOFError:
            pass  # the end of the cases: the running ones finish
        except BaseException:  # Ctrl-C, or a message cut short (the parent died)
            stopped = True
        finally:
            if stopped or os.getppid() != parent:
                cancel.set()
    results.close()
