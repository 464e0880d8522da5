"""The project folder a run edits: what model-driven actions may touch there, and how host-side writes are made.

Version-control and tool metadata (``.git``, ``.hg``, ``.svn``, ``.jj``, ``.envrc``, and rlm's own ``.rlm``) is
read-only for everything the model drives, at any depth: the user's tools run what they find there (a
``core.fsmonitor`` command in ``.git/config`` runs on the next ``git status``). Host-side writes walk the path one
folder at a time from the project folder's descriptor, never through a link (``O_NOFOLLOW``), so code racing in
the sandbox (swapping a folder for a symlink) cannot make them create or write anything outside. After each step
of a sandbox that mounts the folder, :func:`sweep_workspace` removes metadata the code created and clears set-ID bits.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from pathlib import Path, PurePath, PurePosixPath
from typing import Iterable

#: Names (any folder level, compared case-insensitively) the model's actions never write, create or delete.
PROTECTED_NAMES = frozenset({".git", ".hg", ".svn", ".jj", ".envrc", ".rlm"})
_DIRECTORY = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class WorkspaceRefused(ValueError):
    """A model-driven action the project folder does not allow; the message says why (shown to the model)."""


def check_workspace_write(relative: PurePath | str) -> None:
    """WorkspaceRefused when ``relative`` lies in version-control or tool metadata (any part of it, at any depth)."""
    for part in PurePosixPath(str(relative).replace("\\", "/")).parts:
        if part.lower() in PROTECTED_NAMES:
            raise WorkspaceRefused(f"{relative}: {part} is version-control or tool metadata, read-only for the model")


def open_in_workspace(root: Path, relative: PurePosixPath | str, flags: int, *, make_parents: bool = False,
            mode: int = 0o644) -> int:
    """A descriptor for ``root/relative`` reached one component at a time from ``root``'s descriptor: every folder
    opened with ``O_NOFOLLOW|O_DIRECTORY`` (made when missing and ``make_parents``), the file with ``O_NOFOLLOW``
    and ``O_NONBLOCK`` (a FIFO never blocks). OSError (ELOOP, ENOTDIR…) when a link or a non-folder is met."""
    parts = _inside(relative)
    folder = _folder_fd(root, parts[:-1], make_parents)
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode,
                       dir_fd=folder)
    finally:
        os.close(folder)


def remove_in_workspace(root: Path, relative: PurePosixPath | str) -> None:
    """Delete the file ``root/relative`` (never a folder, never through a link)."""
    parts = _inside(relative)
    folder = _folder_fd(root, parts[:-1], False)
    try:
        if stat.S_ISDIR(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder")
        os.unlink(parts[-1], dir_fd=folder)
    finally:
        os.close(folder)


def _inside(relative: PurePosixPath | str) -> list[str]:
    """The parts of a relative path inside the folder; OSError (EINVAL) for an empty, absolute or ``..`` path."""
    parts = [p for p in PurePosixPath(str(relative).replace("\\", "/")).parts if p not in ("", ".")]
    if not parts or any(p in ("..", "/") for p in parts):
        raise OSError(errno.EINVAL, f"not a path inside the folder: {relative}")
    return parts


def _folder_fd(root: Path, parts: Iterable[str], make: bool) -> int:
    fd = os.open(root, _DIRECTORY)
    try:
        for part in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            child = os.open(part, _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def workspace_metadata(root: Path) -> set[str]:
    """The protected entries under ``root`` now (relative paths), found without descending into them."""
    found = set()
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder).relative_to(root)
        for name in [*dirs, *files]:
            if name.lower() in PROTECTED_NAMES:
                found.add((base / name).as_posix())
        dirs[:] = [d for d in dirs if d.lower() not in PROTECTED_NAMES]
    return found


def sweep_workspace(root: Path, before: set[str]) -> list[str]:
    """After sandbox code ran in ``root``: remove protected entries that were not there ``before`` (what the code
    created: a new ``.git`` would give the user's git a config to run) and clear set-user-ID / set-group-ID bits
    of regular files (a program left for anyone to run with the owner's rights). Returns what it changed."""
    changed = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        base = Path(folder)
        for name in [*dirs, *files]:
            relative = (base / name).relative_to(root).as_posix()
            if name.lower() in PROTECTED_NAMES and relative not in before:
                _remove_tree(base / name)
                changed.append(relative)
        dirs[:] = [d for d in dirs if d.lower() not in PROTECTED_NAMES and (base / d).exists()]
        for name in files:
            if name.lower() not in PROTECTED_NAMES and _clear_set_id(base / name):
                changed.append((base / name).relative_to(root).as_posix())
    return changed


def _remove_tree(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)  # rmtree never follows links out
        else:
            path.unlink(missing_ok=True)


def _clear_set_id(path: Path) -> bool:
    try:
        if not os.lstat(path).st_mode & (stat.S_ISUID | stat.S_ISGID):
            return False
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False  # gone, a link, unreadable: nothing to clear through it
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
            os.fchmod(fd, stat.S_IMODE(mode) & ~(stat.S_ISUID | stat.S_ISGID))
            return True
        return False
    except OSError:
        return False
    finally:
        os.close(fd)
