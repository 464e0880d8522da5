"""The Monty worker pools of this process: shared by its sandboxes, counted by holder, closed when idle.

Starting a pool and its worker costs the host ≈ 3 ms and the worker its own start; a checkout from a warm pool
≈ 0.04 ms. So every sandbox of a process (a benchmark's cases, a run's child runs, chat turns) checks its session
out of one pool per set of pool options and address-space cap (a hard OS limit, never raised again on a worker).
Nothing is shared between sessions: Monty starts every checkout on an empty namespace, a worker that died is
replaced, each checkout gets its own limits, and a worker is recycled after ``RECYCLE_AFTER`` sessions. A pool
that no sandbox holds is closed ``LINGER`` seconds later, so back-to-back runs reuse it and a long-lived process
(chat, the MCP server) gives its idle workers back.

A forked child (``rlm bench run`` worker processes) never uses or closes its parent's pools: they are set aside
at the fork and the child starts its own (both rules registered with the host's ``register_process_state``).
"""

from __future__ import annotations

import threading
from typing import Any, Hashable

from rlm_host.sdk.sandbox import register_process_state

LINGER = 5.0  # seconds an unheld pool stays open for the next sandbox
RECYCLE_AFTER = 200  # sessions a worker serves before the pool replaces it
MAX_WORKERS = 1024  # a cap far above any concurrency (pydantic-monty's default is the CPU count)


class _Entry:
    """One open pool, how many sandboxes hold it, and the timer that will close it when none does."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool
        self.holders = 0
        self.closer: threading.Timer | None = None


_lock = threading.Lock()
_pools: dict[Hashable, _Entry] = {}
_inherited: list[_Entry] = []  # a parent's pools seen by a forked child: kept referenced, never closed here


def acquire(key: tuple[Any, ...], monty: Any) -> Any:
    """The open pool for ``key`` = (binary path, checkout timeout, request timeout, address-space cap), started if
    needed; the caller holds it until ``release(key)``. Raises what pydantic-monty raises when the pool cannot
    start. The cap is in the key because it is a hard limit the host cannot raise again on a worker: sessions with
    another cap get workers of their own."""
    with _lock:
        entry = _pools.get(key)
        if entry is None:
            binary, checkout_timeout, request_timeout, _cap = key
            pool = monty.Monty(
                binary_path=binary, min_processes=1, max_processes=MAX_WORKERS, checkout_timeout=checkout_timeout,
                request_timeout=request_timeout, max_checkouts_per_worker=RECYCLE_AFTER,
            )
            pool.__enter__()
            entry = _pools[key] = _Entry(pool)
        if entry.closer is not None:
            entry.closer.cancel()
            entry.closer = None
        entry.holders += 1
        return entry.pool


def release(key: tuple[Any, ...]) -> None:
    """One holder less; the last one starts the pool's idle timer."""
    with _lock:
        entry = _pools.get(key)
        if entry is None:
            return
        entry.holders = max(0, entry.holders - 1)
        if entry.holders == 0 and entry.closer is None:
            closer = entry.closer = threading.Timer(LINGER, _close_idle, (key, entry))
            closer.daemon = True
            closer.start()


def _close_idle(key: Hashable, entry: _Entry) -> None:
    with _lock:
        if _pools.get(key) is not entry or entry.holders:
            return
        del _pools[key]
    _close(entry)


def _close(entry: _Entry) -> None:
    try:
        entry.pool.__exit__(None, None, None)
    except Exception:
        pass  # a pool whose workers are already gone has nothing left to stop


def close_all() -> None:
    """Close every pool of this process now (at exit; tests)."""
    with _lock:
        entries = list(_pools.values())
        _pools.clear()
    for entry in entries:
        if entry.closer is not None:
            entry.closer.cancel()
        _close(entry)


def open_pools() -> dict[Hashable, int]:
    """How many sandboxes hold each open pool (for tests and diagnostics)."""
    with _lock:
        return {key: entry.holders for key, entry in _pools.items()}


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    _inherited.extend(_pools.values())
    _pools.clear()


register_process_state("monty pools", after_fork_in_child=_after_fork_in_child, at_exit=close_all)
