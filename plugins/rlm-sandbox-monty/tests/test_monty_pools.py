"""Sandboxes of one process share Monty workers (``rlm_sandbox_monty.pools``) and share nothing else: each session
starts on an empty namespace with its own limits, a dead worker is replaced, an unheld pool closes, and a forked
child never touches its parent's pool. Real Monty workers, no mocks."""

from __future__ import annotations

import os
import threading
import time

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host.sdk.sandbox import SandboxLimits  # noqa: E402

from rlm_sandbox_monty import pools  # noqa: E402
from rlm_sandbox_monty.runtime import MontySandbox  # noqa: E402
from rlm_sandbox_monty.settings import MontySettings  # noqa: E402
from rlm_sandbox_monty.worker import MIB  # noqa: E402
from rlm_sandbox_monty.worker import process_running as _running  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_pools(monkeypatch):
    monkeypatch.setattr(pools, "LINGER", 0.2)
    pools.close_all()
    yield
    pools.close_all()


def _used(limits: SandboxLimits | None = None) -> MontySandbox:
    sandbox = MontySandbox(limits=limits)
    sandbox.start()
    return sandbox


def test_the_next_sandbox_reuses_the_worker_with_nothing_left_of_the_last():
    first = _used()
    first.set_variable("context", "the first case's secret")
    assert first.execute("answer = 41 + 1\nFINAL_VAR('answer')").final.value == 42
    pid = first.pid
    first.shutdown()

    second = _used()
    try:
        assert second.pid == pid  # a warm worker: no process started for this sandbox
        assert second.list_variables() == {}
        result = second.execute("print(answer)")
        assert "NameError" in result.error
        assert "NameError" in second.execute("print(context)").error
        assert second.execute("print(sorted(locals()))").stdout == "[]\n"
    finally:
        second.shutdown()


def test_each_sandbox_keeps_its_own_limits_on_a_reused_worker():
    small = _used(SandboxLimits(memory_mb=64))
    assert "MemoryError" in (small.execute("x = 'a' * (200 * 1024 * 1024)").error or "")
    small.shutdown()
    large = _used(SandboxLimits(memory_mb=1024))
    try:
        assert large.execute("x = 'a' * (200 * 1024 * 1024)\nprint(len(x))").stdout == f"{200 * 1024 * 1024}\n"
    finally:
        large.shutdown()


def test_a_session_after_a_smaller_one_gets_its_own_address_space_cap():
    """The OS cap (heap limit + headroom) is a hard limit: a worker capped for a small session cannot be raised
    for a large one, so a large session never runs on such a worker (it would fail far below its own limit)."""
    import resource

    settings = MontySettings(os_memory_headroom_mb=256)
    small = MontySandbox(settings, SandboxLimits(memory_mb=64))
    small.start()
    assert resource.prlimit(small.pid, resource.RLIMIT_AS)[1] == (64 + 256) * MIB
    small.shutdown()
    large = MontySandbox(settings, SandboxLimits(memory_mb=1024))
    large.start()
    try:
        assert resource.prlimit(large.pid, resource.RLIMIT_AS) == ((1024 + 256) * MIB,) * 2
        size = 400 * 1024 * 1024  # above the small session's cap, well below the large one's
        assert large.execute(f"x = 'a' * {size}\nprint(len(x))").stdout == f"{size}\n"
    finally:
        large.shutdown()
    again = MontySandbox(settings, SandboxLimits(memory_mb=64))
    again.start()
    try:
        assert again.pid == small.pid or not _running(small.pid), "a worker of the same cap is reused"
        assert resource.prlimit(again.pid, resource.RLIMIT_AS)[1] == (64 + 256) * MIB
    finally:
        again.shutdown()


def test_sandboxes_open_at_once_never_share_a_worker():
    opened = [_used() for _ in range(6)]
    try:
        assert len({s.pid for s in opened}) == 6
        for number, sandbox in enumerate(opened):
            sandbox.execute(f"mine = {number}")
        assert [s.get_variable("mine") for s in opened] == list(range(6))
        assert len(pools.open_pools()) == 1 and list(pools.open_pools().values()) == [6]
    finally:
        for sandbox in opened:
            sandbox.shutdown()


def test_threads_running_cases_at_once_each_get_their_own_answer():
    answers: dict[int, object] = {}

    def case(number: int) -> None:
        sandbox = MontySandbox()
        try:
            sandbox.set_variable("context", f"case {number}")
            answers[number] = sandbox.execute("FINAL(context)").final.value
        finally:
            sandbox.shutdown()

    threads = [threading.Thread(target=case, args=(n,)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert answers == {n: f"case {n}" for n in range(24)}


def test_a_worker_killed_by_a_timeout_is_replaced_for_the_next_sandbox():
    first = _used()
    pid = first.pid
    result = first.execute("while True:\n    pass", timeout=0.5)
    assert "timed out" in (result.error or "").lower() or "time" in (result.error or "").lower()
    first.shutdown()
    second = _used()
    try:
        assert second.pid != pid
        assert second.execute("print(1 + 1)").stdout == "2\n"
    finally:
        second.shutdown()


def test_an_unheld_pool_closes_and_its_workers_end():
    sandbox = _used()
    pid = sandbox.pid
    sandbox.shutdown()
    deadline = time.monotonic() + 5
    while pools.open_pools() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pools.open_pools() == {}
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(pid)


def test_a_sandbox_taken_within_the_linger_keeps_the_pool_open():
    _used().shutdown()
    time.sleep(0.05)
    again = _used()
    time.sleep(0.4)  # past the linger of the first release: the pool is held again, so it stays
    try:
        assert list(pools.open_pools().values()) == [1]
        assert again.execute("print('alive')").stdout == "alive\n"
    finally:
        again.shutdown()


def test_a_forked_child_never_closes_its_parents_pool():
    """A child forked while the parent holds a pool sees no pool of its own, and its exit (``close_all`` runs at
    exit) leaves the parent's workers running. (pydantic-monty cannot start workers in a child forked after it
    was used, so ``rlm bench run`` forks its workers before any case runs.)"""
    parent = _used()
    parent_pid = parent.pid
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            os.close(read)
            inherited = pools.open_pools()
            pools.close_all()  # what the child's exit runs
            os.write(write, b"ok" if inherited == {} else b"bad")
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    try:
        _, status = os.waitpid(child, 0)
        assert os.read(read, 10) == b"ok" and status == 0
        assert parent.execute("print('parent still here')").stdout == "parent still here\n"
        assert parent.pid == parent_pid and _running(parent_pid)
    finally:
        os.close(read)
        parent.shutdown()
