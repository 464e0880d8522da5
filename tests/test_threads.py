"""``rlm_host.threads.run_in_thread``: a run's helper threads (model calls, warm-ups, step timers, output readers)
reuse idle daemon threads instead of starting one each, run side by side when they overlap, and end when idle."""

from __future__ import annotations

import threading
import time

from rlm_host import threads


def _run_and_wait(work, name="rlm-test-helper"):
    done = threading.Event()

    def task():
        try:
            work()
        finally:
            done.set()

    threads.run_in_thread(task, name)
    assert done.wait(5)


def test_a_helper_that_finished_runs_the_next_work_under_its_name():
    seen = []
    _run_and_wait(lambda: seen.append((threading.get_ident(), threading.current_thread().name)), "first-helper")
    deadline = time.monotonic() + 5
    while not threads.idle_helpers() and time.monotonic() < deadline:
        time.sleep(0.005)  # the helper counts itself idle
    existing = {t.ident for t in threading.enumerate()}
    _run_and_wait(lambda: seen.append((threading.get_ident(), threading.current_thread().name)), "second-helper")
    assert seen[1][0] in existing  # an idle helper took it: no thread was started
    assert [name for _, name in seen] == ["first-helper", "second-helper"]
    assert threading.current_thread().daemon is False  # the caller's own thread is untouched


def test_overlapping_work_runs_side_by_side_on_daemon_threads():
    started, release = threading.Barrier(9), threading.Event()
    idents, daemons = set(), []

    def work():
        idents.add(threading.get_ident())
        daemons.append(threading.current_thread().daemon)
        started.wait(5)  # all eight must run at once for the barrier to open
        release.wait(5)

    for _ in range(8):
        threads.run_in_thread(work, "rlm-test-overlap")
    started.wait(5)
    release.set()
    assert len(idents) == 8 and all(daemons)


def test_work_that_raises_leaves_the_helper_serving():
    def boom():
        raise RuntimeError("the work reports its own errors")

    threads.run_in_thread(boom, "rlm-test-boom")
    time.sleep(0.05)
    seen = []
    _run_and_wait(lambda: seen.append(1))
    assert seen == [1]


def test_idle_helpers_end(monkeypatch):
    monkeypatch.setattr(threads, "IDLE_SECONDS", 0.1)
    waiting = threads.idle_helpers()  # helpers already waiting (30 s) take one task each, then wait 0.1 s
    barrier = threading.Barrier(waiting + 1)
    for _ in range(waiting):
        threads.run_in_thread(lambda: barrier.wait(5), "rlm-test-wake")
    barrier.wait(5)
    helper = []
    _run_and_wait(lambda: helper.append(threading.current_thread()))
    deadline = time.monotonic() + 5
    while (threads.idle_helpers() or helper[0].is_alive()) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert threads.idle_helpers() == 0 and not helper[0].is_alive()
