"""Killing a sandbox worker with every process it left behind, wherever they moved: ``kill_tree(pid)``.

Killing the worker's process group is not enough: a command run by model code may start a session of its own
(``setsid sleep 1000 &``) and its shell exit, so the process is in no group of ours and its parent is gone. The
worker makes itself a child subreaper (``worker.py``, ``PR_SET_CHILD_SUBREAPER``): what its descendants orphan is
re-parented to it, never to init, so every process of the session stays its descendant, found through the parent
links in ``/proc``. ``kill_tree`` stops the worker and each descendant (a stopped process cannot fork), looks again
until no new one appears, then kills them all. Where there is no ``/proc``, the process group alone is killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Callable, Optional

#: Rounds of "find the descendants, stop them" before killing: each round stops what the last one missed.
MAX_ROUNDS = 50


def proc_stat(pid: int | str) -> Optional[list[bytes]]:
    """The fields of ``/proc/PID/stat`` after the command name (Linux), or None where there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2:].split()  # the command name, in parentheses, may hold anything


def descendants(pid: int) -> set[int]:
    """The processes whose chain of parents leads to ``pid`` (not ``pid`` itself), from the parent ids in
    ``/proc/PID/stat`` (none where there is no ``/proc``)."""
    children: dict[int, list[int]] = {}
    entries: list[str] = []
    with contextlib.suppress(OSError):
        entries = os.listdir("/proc")
    for name in entries:
        fields = proc_stat(name) if name.isdigit() else None  # None: it ended meanwhile
        if fields and len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    found: set[int] = set()
    waiting = list(children.get(pid, ()))
    while waiting:
        child = waiting.pop()
        if child not in found:
            found.add(child)
            waiting.extend(children.get(child, ()))
    return found


def kill_tree(pid: int) -> None:
    """SIGKILL process ``pid``, its process group and all its descendants; never raises. The caller must know that
    ``pid`` is still its worker (not reaped: a reused id would name another program's tree)."""
    stopped: set[int] = set()
    for _ in range(MAX_ROUNDS):
        new = ({pid} | descendants(pid)) - stopped
        if not new:
            break
        for process in new:
            _signal(os.kill, process, signal.SIGSTOP)
        stopped |= new
    _signal(os.killpg, pid, signal.SIGKILL)
    for process in stopped | {pid}:
        _signal(os.kill, process, signal.SIGKILL)


def _signal(send: Callable[[int, int], None], pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        send(pid, number)
