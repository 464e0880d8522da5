"""Process-wide state: the one registry of what a forked child must reset and what the process releases at exit.

Each process-wide thing (the helper threads, the fork servers, sink delivery, a sandbox plugin's worker pools)
registers under its name, once: ``after_fork_in_child`` runs in a child made by ``os.fork`` before anything else
does (only the forking thread lives there, so locks another thread held stay held and the parent's threads,
servers and pools are not the child's: make new ones, set the parent's aside), ``at_exit`` when the interpreter
exits. An exit callback runs where ``atexit`` puts it (last registered, first run): a thing that registers its
exit callback when it first starts work (sink delivery, after the sinks' own libraries registered theirs) runs
before what those libraries do at exit. Registering a name again replaces its callbacks.
"""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Callable

Callback = Callable[[], object]

_after_fork: dict[str, Callback] = {}
_at_exit: dict[str, Callback] = {}


def register(name: str, *, after_fork_in_child: Callback | None = None, at_exit: Callback | None = None) -> None:
    """``name``'s callbacks: ``after_fork_in_child`` in a forked child, ``at_exit`` at the interpreter's exit."""
    if after_fork_in_child is not None:
        _after_fork[name] = after_fork_in_child
    if at_exit is not None:
        if name not in _at_exit:
            atexit.register(_exit, name)
        _at_exit[name] = at_exit


def registered() -> dict[str, tuple[bool, bool]]:
    """Each registered name: (has an after-fork callback, has an exit callback)."""
    return {name: (name in _after_fork, name in _at_exit) for name in {**_after_fork, **_at_exit}}


def _in_child() -> None:
    for callback in list(_after_fork.values()):  # each on its own: one that fails leaves the others to run
        with contextlib.suppress(Exception):  # a child must not die of its copy of the parent's state
            callback()


def _exit(name: str) -> None:
    with contextlib.suppress(Exception):  # the others still run
        _at_exit[name]()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)
