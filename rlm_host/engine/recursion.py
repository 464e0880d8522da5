"""Depth limit and cycle guard for child runs (rlm_query, delegate).

A child one level past ``max_depth`` is refused (pure_rlm then falls back to a plain llm_query); a child whose
(environment, task) fingerprint is already active up the tree is refused as a cycle (RLM Code's
blocked_by_cycle_guard, rewarded −0.25 by the generic environment).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter

from rlm_host.errors import RecursionRefused


def fingerprint(environment: str, task: str) -> str:
    return hashlib.sha1(f"{environment}\x00{task.strip()}".encode("utf-8")).hexdigest()


class RecursionGuard:
    """Active fingerprints of a run tree; thread-safe, as delegate_batch children run concurrently."""

    def __init__(self, max_depth: int) -> None:
        self.max_depth = max_depth
        self._active: Counter[str] = Counter()
        self._lock = threading.Lock()

    def check(self, depth: int, environment: str, task: str) -> None:
        """Raise RecursionRefused if a child at ``depth`` running ``task`` may not start."""
        if depth > self.max_depth:
            raise RecursionRefused("max_depth", f"max_depth ({self.max_depth}) reached")
        with self._lock:
            if self._active[fingerprint(environment, task)]:
                raise RecursionRefused("cycle", "blocked_by_cycle_guard: this task is already being solved up the tree")

    def enter(self, environment: str, task: str) -> str:
        key = fingerprint(environment, task)
        with self._lock:
            self._active[key] += 1
        return key

    def leave(self, key: str) -> None:
        with self._lock:
            self._active -= Counter([key])  # a count that reaches 0 is dropped
