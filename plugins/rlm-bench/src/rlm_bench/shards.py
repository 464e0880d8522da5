"""Cases spread over worker processes: one Python process does at most one core's worth of engine work (the GIL),
so ``rlm bench run -j N`` with a large N forks workers that each run a share of the cases on threads of their own.

The parent forks the workers before any case runs, while it is still single-threaded (the only moment a fork is
safe), so they inherit the loaded plugins, settings and cases and start in milliseconds. It then hands out cases
one at a time as a worker's threads free up, and gets back each finished ``CaseResult`` as a JSON line; it alone
saves results and reports progress. Ctrl-C (or a parent stopped by a signal) sends each worker a stop on its
control pipe: it cancels its running cases, sends what finished, and exits (as it does when the parent dies). A worker that dies, or a setup error in one (a
bad model name: nothing can run), stops the benchmark with one error, finished cases saved.

Linux only (fork); elsewhere, and from a process that already runs threads (a server embedding rlm-bench), the
cases run on threads in one process as before.
"""

from __future__ import annotations

import json
import os
import selectors
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional

from rlm_host import RlmError

#: Threads a worker process should have at least before another process pays off.
THREADS_PER_PROCESS = 8
#: Worker processes per core at most: two let the kernel share a core between bursts of cases that one
#: process's interpreter lock would run one at a time (``-j 32`` on 2 cores: 4 processes, 1.2x → 1.16x the ideal).
PROCESSES_PER_CORE = 2
#: The control line that cancels a worker's running cases (end of input alone lets them finish).
STOP = b"stop"

RunCase = Callable[[Any, threading.Event], Any]  # (case, cancel) -> CaseResult, or None when cancelled


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
    control: int  # the parent writes case numbers here (-1 once closed)
    results: int  # the parent reads result lines here
    threads: int
    running: set[int] = field(default_factory=set)
    partial: bytes = b""  # the start of a result line not yet whole
    ended: bool = False


class Shards:
    """The worker processes of one benchmark run; ``events()`` yields ``(case number, result or error)``."""

    def __init__(self, cases: list[Any], run_case: RunCase, processes: int, concurrency: int) -> None:
        self.cases = cases
        self.pending = iter(range(len(cases)))
        self.workers: list[_Worker] = []
        self.stopping = False
        for k in range(processes):
            threads = concurrency // processes + (1 if k < concurrency % processes else 0)
            self.workers.append(_fork(cases, run_case, threads, self.workers))

    def events(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Hand out cases as threads free up; yield each answer until every worker has ended."""
        selector = selectors.DefaultSelector()
        for worker in self.workers:
            if not worker.ended:
                selector.register(worker.results, selectors.EVENT_READ, worker)
                self._feed(worker)
        try:
            while any(not w.ended for w in self.workers):
                for key, _ in selector.select():
                    worker: _Worker = key.data
                    chunk = os.read(worker.results, 1 << 16)
                    if not chunk:
                        selector.unregister(worker.results)
                        yield from self._ended(worker)
                        continue
                    *lines, worker.partial = (worker.partial + chunk).split(b"\n")
                    for line in lines:
                        message = json.loads(line)
                        worker.running.discard(message["case"])
                        yield message["case"], message
                    self._feed(worker)
        finally:
            selector.close()

    def stop(self) -> None:
        """No more cases: each worker cancels what runs, sends what finished and exits."""
        self.stopping = True
        for worker in self.workers:
            if worker.control >= 0:
                try:
                    os.write(worker.control, STOP + b"\n")
                except OSError:
                    pass  # it ended already: nothing runs there
            _close_control(worker)

    def wait(self) -> None:
        """Reap every worker (after ``events()`` ran out, or once stopped)."""
        for worker in self.workers:
            _close_control(worker)
            if worker.pid:
                try:
                    os.waitpid(worker.pid, 0)
                except ChildProcessError:
                    pass
                worker.pid = 0
            try:
                os.close(worker.results)
            except OSError:
                pass

    def _feed(self, worker: _Worker) -> None:
        while not self.stopping and worker.control >= 0 and len(worker.running) < worker.threads:
            number = next(self.pending, None)
            if number is None:
                _close_control(worker)  # nothing left: the worker ends once its cases are done
                return
            worker.running.add(number)
            try:
                os.write(worker.control, f"{number}\n".encode())
            except OSError:  # the worker died: its end of the pipe is gone (reported when its results end)
                return

    def _ended(self, worker: _Worker) -> Iterator[tuple[int, dict[str, Any]]]:
        worker.ended = True
        _close_control(worker)
        status = 0
        if worker.pid:
            try:
                _, status = os.waitpid(worker.pid, 0)
            except ChildProcessError:
                pass
        worker.pid = 0
        if worker.running and not self.stopping:
            how = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
            lost = ", ".join(self.cases[n].case_id for n in sorted(worker.running))
            for number in sorted(worker.running):
                yield number, {"case": number, "died": f"a benchmark worker process ended ({how}) while running "
                                                        f"case(s) {lost}"}  # fmt: skip
        worker.running.clear()


def _close_control(worker: _Worker) -> None:
    """Close the worker's control pipe once (a closed descriptor's number may soon belong to another file)."""
    if worker.control >= 0:
        try:
            os.close(worker.control)
        except OSError:
            pass
        worker.control = -1


def _fork(cases: list[Any], run_case: RunCase, threads: int, siblings: list[_Worker]) -> _Worker:
    control_read, control_write = os.pipe()
    results_read, results_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the parent's stack
        code = 1
        try:
            # the parent's ends of every pipe stay with the parent only, else a sibling's pipe never sees its end
            for fd in (control_write, results_read, *(w.control for w in siblings),
                       *(w.results for w in siblings)):  # fmt: skip
                os.close(fd)
            _serve(cases, run_case, threads, control_read, results_write)
            code = 0
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(control_read)
    os.close(results_write)
    os.set_inheritable(control_write, False)
    return _Worker(pid, control_write, results_read, threads)


def _serve(cases: list[Any], run_case: RunCase, threads: int, control: int, results: int) -> None:
    """The worker's loop: run each case number read from ``control`` on a thread, answer on ``results``."""
    cancel = threading.Event()
    lock = threading.Lock()

    def answer(message: dict[str, Any]) -> None:
        data = (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8", errors="surrogatepass")
        with lock:  # one whole line at a time (a pipe write may take part of it)
            view = memoryview(data)
            while view:
                view = view[os.write(results, view):]

    def run(number: int) -> None:
        try:
            result = run_case(cases[number], cancel)
            if result is None:
                answer({"case": number, "cancelled": True})
            else:
                answer({"case": number, "result": result.model_dump(mode="json")})
        except KeyboardInterrupt:
            answer({"case": number, "cancelled": True})
        except RlmError as exc:  # nothing could run (a bad model name…): the parent stops the benchmark
            answer({"case": number, "error": {"message": exc.message, "hint": exc.hint, "exit_code": exc.exit_code}})
        except BaseException as exc:
            answer({"case": number, "error": {"message": f"{type(exc).__name__}: {exc}", "hint": "", "exit_code": 1}})

    parent = os.getppid()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="bench") as pool:
        stopped = False
        try:
            with os.fdopen(control, "rb", buffering=0) as lines:
                for line in iter(lines.readline, b""):
                    if line.strip() == STOP:
                        stopped = True
                        break
                    pool.submit(run, int(line))
        except KeyboardInterrupt:
            stopped = True
        finally:
            # the end of the cases lets running ones finish; a stop, Ctrl-C or a parent gone cancels them
            if stopped or os.getppid() != parent:
                cancel.set()
    os.close(results)
