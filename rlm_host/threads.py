"""Daemon threads reused across calls, for the short-lived helpers a run starts.

A run starts helper threads of its own: one per model call (so a cancellation can abandon it), the client's
warm-up, a sandbox's step timer and output readers. Starting an OS thread costs the host ≈ 0.1 ms of CPU, and
with many runs in one process (``rlm bench run -j 32``) ``Thread.start()`` also waits for the new thread to get the
interpreter lock. ``run_in_thread`` hands the work to an idle helper instead, or starts one; a helper waits
``IDLE_SECONDS`` for more work before it ends. Helpers are daemon threads, like the threads they replace: work
that never returns (an abandoned model call) never holds up the process's exit.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from concurrent.futures import Future
from typing import Callable, TypeVar

from rlm_host.process_state import register

IDLE_SECONDS = 30.0
T = TypeVar("T")

_lock = threading.Lock()
_tasks: "queue.SimpleQueue[tuple[Callable[[], object], str]]" = queue.SimpleQueue()
_idle = 0  # helpers waiting for work; each task put on the queue was counted against one of them


def run_in_thread(work: Callable[[], object], name: str) -> None:
    """Run ``work()`` on a daemon helper thread named ``name`` while it runs; its exceptions are ignored (the
    caller passes results and errors back itself)."""
    global _idle
    with _lock:
        if _idle:
            _idle -= 1
            _tasks.put((work, name))
            return
    threading.Thread(target=_serve, args=(work, name), name=name, daemon=True).start()


def submit(call: Callable[[], T], name: str) -> "Future[T]":
    """``call()`` on a helper thread (``run_in_thread``), in a copy of the caller's context; its result or its
    exception lands in the returned future, which the caller waits on as long as it chooses (or abandons)."""
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            future.set_result(context.run(call))
        except BaseException as exc:  # noqa: BLE001 - handed back through the future
            future.set_exception(exc)

    run_in_thread(work, name)
    return future


def _serve(work: Callable[[], object], name: str) -> None:
    global _idle
    me = threading.current_thread()
    while True:
        me.name = name
        with contextlib.suppress(BaseException):  # the work reports its own outcome; the helper lives on
            work()
        work = name = None  # type: ignore[assignment]  # let the finished work's objects go
        me.name = "rlm-idle-helper"
        with _lock:
            _idle += 1
        while True:
            try:
                work, name = _tasks.get(timeout=IDLE_SECONDS)
                break
            except queue.Empty:
                with _lock:
                    if _tasks.empty():  # no task was counted against this helper: it ends
                        _idle -= 1
                        return


def idle_helpers() -> int:
    """How many helpers wait for work (for tests)."""
    return _idle


def _after_fork_in_child() -> None:
    global _lock, _tasks, _idle
    _lock, _tasks, _idle = threading.Lock(), queue.SimpleQueue(), 0  # the parent's helpers do not exist here


register("helper threads", after_fork_in_child=_after_fork_in_child)
