"""The runs in progress on this machine, whatever folder they run in, and cancelling one from any process:
``rlm runs active`` / ``cancel``.

Every root run registers itself, for as long as it runs, in this user's registry of live runs:
``<state>/active/<run_id>.json``, where ``<state>`` is ``$XDG_STATE_HOME/rlm``, else ``~/.local/state/rlm``
(``rlm_host.config.paths.user_state_dir``): one folder per user, whatever the working folder or the run home. The
entry holds the process id and that process's start time, the command, task, environment, model, run home and
trajectory. Cancelling writes ``<run_id>.cancel`` beside it; a watcher thread in the run's process sees the file
within ``POLL_SECONDS`` and sets the run's cancel event, so the run stops at its next check (a model call in
progress is abandoned), its trajectory ends ``cancelled`` and its sandbox is released. A canceller writes nothing
in the run's home and signals no process: a request is a file only the registered process watches. A run whose
process is gone (or whose process id now belongs to another program, or to another user) is ``dead``, never
``active``; each new registration sweeps the dead entries away. Nothing of this may fail a run: a registry that
cannot be written leaves the run unregistered, with one warning.

The folder is private (created 0700, a looser mode tightened; a link there, or another user's folder, is refused),
and what it holds is still read as untrusted input: every file is written as a new private temporary file renamed
over its name (``write_atomic``: a link planted there is replaced, never written through), entries are read only
from regular files of bounded size (``read_regular``: a FIFO never hangs a listing), an entry whose id is not its
file's name is ignored (an id is a name, never a path; the home and trajectory it names are shown, never written),
and only a regular ``.cancel`` file is a request. The task is redacted before it is clipped (a key cut in two
would no longer match).
"""

from __future__ import annotations

import builtins  # builtins.list in ActiveRuns, whose method `list` hides the type there
import contextlib
import errno
import json
import os
import re
import socket
import stat
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, Field

from rlm_host.config.paths import user_state_dir
from rlm_host.context import read_regular, write_atomic
from rlm_host.errors import InputError
from rlm_host.redact import redacted_clip
from rlm_host.sandbox.process_tree import proc_stat
from rlm_host.threads import run_in_thread

ACTIVE_DIR = "active"
_COMMAND_WORD = re.compile(r"[a-z][a-z0-9_-]{0,20}")
POLL_SECONDS = 0.2
#: An entry is a few hundred bytes; a larger file is not one of ours.
MAX_ENTRY_BYTES = 64 * 1024

Status = Literal["active", "cancelling", "dead", "elsewhere"]


class ActiveRun(BaseModel):
    """One registered run. ``status``: ``active``, ``cancelling`` (asked to stop, still running), ``dead`` (its
    process is gone: the run will never end on its own) or ``elsewhere`` (registered by another machine sharing
    this user's home folder: its process cannot be checked from here). ``home``: the run home it writes to."""

    run_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,120}$")
    pid: int = Field(gt=0)
    host: str
    started: datetime
    task: str = ""
    environment: str = ""
    model: str = ""
    command: str = ""
    home: str = ""
    trajectory: str = ""
    process_start: Optional[int] = None  # the process's start time in clock ticks (Linux), against pid reuse
    status: Status = "active"


class NoActiveRunError(InputError):
    """No registered run matches the id or prefix given (or more than one does)."""


class RegistryError(InputError):
    """The registry folder cannot be used: a link, a file, another user's folder."""


def _uid() -> Optional[int]:
    return os.geteuid() if hasattr(os, "geteuid") else None


def _private_folder(folder: Path, create: bool) -> bool:
    """Whether ``folder`` is there to be used as a registry: a folder (not a link) of this user's, its mode
    tightened to 0700 when looser. ``create``: make it first (0700, its parent too if missing). OSError when
    something else is at that name (a link, a file) or the folder is another user's."""
    if create:
        folder.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(info.st_mode):
        raise OSError(errno.ENOTDIR, f"{folder} is not a folder (a link or a file is there)")
    uid = _uid()
    if uid is not None and info.st_uid != uid:
        raise OSError(errno.EPERM, f"{folder} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return True


def _alive(pid: int, started: Optional[int]) -> bool:
    """Whether process ``pid`` runs and is the one that registered: this user's, with the same start time (where
    ``/proc`` tells it, an entry without one is not believed; a zombie is dead)."""
    try:
        os.kill(pid, 0)
    except (OSError, OverflowError):
        return False  # gone, or another user's process: never one of this user's runs
    fields = proc_stat(pid)
    if fields is None:
        return not Path("/proc/self/stat").exists()  # no /proc here: os.kill is all we know
    try:
        owner = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return False
    uid = _uid()
    if (uid is not None and owner != uid) or fields[0] in (b"Z", b"X"):
        return False
    return started is not None and len(fields) > 19 and int(fields[19]) == started


def _requested(cancel_file: Path) -> bool:
    """Whether a cancel request stands: a regular file at that name (a link or a FIFO planted there is none)."""
    try:
        return stat.S_ISREG(os.lstat(cancel_file).st_mode)
    except OSError:
        return False


def command_words() -> str:
    """This process as a person recognises it: ``rlm run``, ``rlm mcp serve``, ``python bench.py`` (the program and
    its leading words; options and their values are left out, they may hold secrets)."""
    argv = list(sys.argv) or ["python"]
    words = [Path(argv[0]).name or "python"]
    for word in argv[1:4]:
        if not _COMMAND_WORD.fullmatch(word):  # a sub-command, not an option, a task or a path
            break
        words.append(word)
    return " ".join(words)


class Registration:
    """A run's entry in the registry, and the thread (``run_in_thread``) that polls its cancel file every
    ``POLL_SECONDS`` and sets the run's cancel event; ``close()`` stops it and removes the entry (and any cancel
    request) when the run ends."""

    def __init__(self, folder: Path, run_id: str, cancel: threading.Event) -> None:
        self.folder = folder
        self.run_id = run_id
        self._closed = threading.Event()
        run_in_thread(lambda: self._watch(folder / f"{run_id}.cancel", cancel), "rlm-cancel-watcher")

    def _watch(self, cancel_file: Path, cancel: threading.Event) -> None:
        while not self._closed.wait(POLL_SECONDS):
            if not cancel.is_set() and _requested(cancel_file):
                cancel.set()

    def close(self) -> None:
        self._closed.set()
        _remove(self.folder, self.run_id)


def _remove(folder: Path, run_id: str) -> None:
    """Remove run ``run_id``'s entry and any cancel request."""
    for suffix in (".json", ".cancel"):
        with contextlib.suppress(OSError):
            (folder / f"{run_id}{suffix}").unlink()


class ActiveRuns:
    """This user's registry of the runs in progress on this machine: ``<user_state_dir>/active``
    (``~/.local/state/rlm/active``), whatever the working folder."""

    def __init__(self) -> None:
        self.dir = user_state_dir() / ACTIVE_DIR

    # ------------------------------------------------------------------ the running process's side

    def register(self, run_id: str, cancel: threading.Event, *, home: str = "", task: str = "",
                 environment: str = "", model: str = "", trajectory: str = "") -> Optional[Registration]:
        """Record run ``run_id`` of this process (``home``: the run home it writes to) and watch for its
        cancellation (``cancel`` is set then); the entries of dead runs are swept away. None, with a warning, when
        the registry cannot be written: the run goes on, uncancellable from outside."""
        pid, fields = os.getpid(), proc_stat(os.getpid())
        path, cancel_file = self.dir / f"{run_id}.json", self.dir / f"{run_id}.cancel"
        try:
            entry = ActiveRun(run_id=run_id, pid=pid, host=socket.gethostname(), started=datetime.now(timezone.utc),
                              task=redacted_clip(task, 200, "ellipsis"), environment=environment, model=model,
                              command=command_words(), home=home and os.path.abspath(os.path.expanduser(home)),
                              trajectory=trajectory and os.path.abspath(os.path.expanduser(trajectory)),
                              process_start=int(fields[19]) if fields and len(fields) > 19 else None)
            _private_folder(self.dir, create=True)
            cancel_file.unlink(missing_ok=True)  # a request left from before is not one for this run
            write_atomic(path, entry.model_dump_json(exclude={"status"}), folder_no_link=True)
        except (OSError, ValueError) as exc:
            from rlm_host import logs

            logs.get_logger("rlm.runs").warning(f"the run is not in the registry of active runs ({exc}): "
                                                "`rlm runs cancel` cannot reach it")
            return None
        with contextlib.suppress(OSError, InputError):  # sweeping is housekeeping: never a reason to fail a run
            self.prune()
        return Registration(self.dir, run_id, cancel)

    # ------------------------------------------------------------------ anyone's side

    def list(self) -> list[ActiveRun]:
        """Every registered run, oldest first, with its status as of now. RegistryError when the registry folder is
        not a folder of this user's."""
        try:
            if not _private_folder(self.dir, create=False):
                return []
        except OSError as exc:
            raise RegistryError(f"the registry of active runs cannot be used: {exc.strerror or exc}") from exc
        here, found = socket.gethostname(), []
        for path in sorted(self.dir.glob("*.json")):
            try:
                run = ActiveRun.model_validate_json(read_regular(path, MAX_ENTRY_BYTES))
            except (OSError, ValueError):
                continue  # being written or removed right now, or not ours (a link, a FIFO, a large file)
            if run.run_id != path.stem:
                continue  # not what register wrote: its id could name a path outside this folder
            if run.host != here:
                run.status = "elsewhere"
            elif not _alive(run.pid, run.process_start):
                run.status = "dead"
            elif _requested(self.dir / f"{run.run_id}.cancel"):
                run.status = "cancelling"
            found.append(run)
        return sorted(found, key=lambda r: r.started)

    def running_ids(self) -> set[str]:
        """The ids of runs whose process is alive (or cannot be checked from here); none when the registry cannot
        be read."""
        try:
            return {run.run_id for run in self.list() if run.status != "dead"}
        except RegistryError:
            return set()

    def find(self, ref: str) -> ActiveRun:
        """The registered run whose id is ``ref`` or starts with it."""
        runs = self.list()
        exact = [run for run in runs if run.run_id == ref]
        matches = exact or [run for run in runs if run.run_id.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            where = f"{len(runs)} registered" if runs else "none is running"
            raise NoActiveRunError(f"no active run matches {ref!r} ({where}; `rlm runs active` lists them)")
        names = ", ".join(run.run_id for run in matches[:5])
        raise NoActiveRunError(f"{ref!r} matches {len(matches)} active runs: {names}; give more of the id")

    def cancel(self, ref: str) -> ActiveRun:
        """Ask run ``ref`` (an id or a unique prefix) to stop; a dead run's entry is removed instead."""
        run = self.find(ref)
        if run.status == "dead":
            _remove(self.dir, run.run_id)
            return run
        return self._request(run)

    def cancel_all(self) -> builtins.list[ActiveRun]:
        """Ask every live run to stop (dead entries are left for ``prune``)."""
        return [self._request(run) for run in self.list() if run.status != "dead"]

    def prune(self) -> builtins.list[ActiveRun]:
        """Remove the entries of dead runs; returns them."""
        dead = [run for run in self.list() if run.status == "dead"]
        for run in dead:
            _remove(self.dir, run.run_id)
        return dead

    def wait(self, run_ids: builtins.list[str], timeout: float) -> builtins.list[str]:
        """Wait up to ``timeout`` seconds for those runs to leave the registry; the ids still there."""
        deadline, left = time.monotonic() + timeout, list(run_ids)
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = [run_id for run_id in left if (self.dir / f"{run_id}.json").exists()]
        return left

    def _request(self, run: ActiveRun) -> ActiveRun:
        """Write ``run``'s cancel file, now ``cancelling``: the one writer of cancel requests (``rlm runs cancel``,
        the TUI's abort and the MCP server's ``rlm_runs_cancel`` all come here through ``cancel`` / ``cancel_all``)."""
        try:
            _private_folder(self.dir, create=False)  # still this user's folder, not a link, right before the write
            write_atomic(self.dir / f"{run.run_id}.cancel", json.dumps({"by_pid": os.getpid(), "at": time.time()}),
                         folder_no_link=True)
        except OSError as exc:
            raise NoActiveRunError(f"cannot ask run {run.run_id} to stop: {exc}") from exc
        run.status = "cancelling"
        return run
