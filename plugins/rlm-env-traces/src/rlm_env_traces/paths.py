"""Where a trace file comes from, and where a model may read or write: one rule for both environments."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any, Optional

from rlm_host import InputError

TASK_TRACE = re.compile(r"\btrace(?:_path)?=(\S+)")


def trace_path_of(context: Any, task: str) -> Optional[Path]:
    """The run's trace file: the ``--context`` file (a Path, unread: ``context_as_path``), else ``trace=<path>``
    or ``trace_path=<path>`` in the task (relative to the working directory), else None."""
    if isinstance(context, Path):
        return context
    named = TASK_TRACE.search(task)
    return Path(named.group(1).strip("\"'")).expanduser().resolve() if named else None


def confined(raw: Any, base: Path, roots: list[Path]) -> Path:
    """``raw`` resolved against ``base``; InputError unless it lies inside one of ``roots``."""
    path = (base / Path(str(raw)).expanduser()).resolve()
    if not any(path == root or path.is_relative_to(root) for root in roots):
        raise InputError(f"path {raw!r} is outside the allowed folders: {', '.join(map(str, roots))}")
    return path


def new_folder_name() -> str:
    """A fresh name for an export the model did not name (an export always goes to a new folder)."""
    return time.strftime("export-%Y%m%d-%H%M%S-") + secrets.token_hex(3)
