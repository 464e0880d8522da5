"""The folders a client may read, checked on what will actually be read.

A path is resolved (``..`` and symlinks too) and must lie inside a root; it must be a regular file or a folder.
A folder is walked first without following links: any link whose target resolves outside the roots, and any
FIFO, socket or device (at the top or inside), refuses the call before anything is opened, so nothing outside
the roots reaches the context and no read can block. The checks use ``stat`` only, and a folder walk has a time
limit, so a call never waits on the file system without bound.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Sequence

#: Seconds a folder walk may take before the call is refused (a huge tree, a slow file system).
WALK_SECONDS = 10.0


class OutsideRoots(ValueError):
    """A path that is missing, resolves outside every root, or is not something a context may be read from."""


class Roots:
    """Allowed folders, resolved once; ``check(path)`` returns the resolved path or raises ``OutsideRoots``."""

    def __init__(self, folders: Sequence[str | Path]) -> None:
        resolved, spelled = [], []
        for folder in folders or [Path.cwd()]:
            path = Path(folder).expanduser().resolve(strict=True)
            if not path.is_dir():
                raise NotADirectoryError(f"--root {folder}: not a folder")
            resolved.append(path)
            spelled += [path, Path(os.path.abspath(Path(folder).expanduser()))]
        self.folders: tuple[Path, ...] = tuple(resolved)
        self._spelled = tuple(dict.fromkeys(spelled))  # a root as given too (a link to it): the lexical pre-check

    def check(self, path: str) -> Path:
        """``path`` (relative paths are relative to the first root) resolved; it must exist inside a root. A path
        outside every root by its spelling alone is refused without touching the file system, so the answer
        never tells whether a file outside the roots exists."""
        try:
            raw = Path(path).expanduser()
            candidate = raw if raw.is_absolute() else self.folders[0] / raw
            lexical = Path(os.path.normpath(candidate))
            resolved = None
            if any(lexical == root or lexical.is_relative_to(root) for root in self._spelled):
                resolved = candidate.resolve(strict=True)
        except (OSError, RuntimeError, ValueError):
            raise OutsideRoots(f"path {path!r} does not exist (relative paths start at {self.folders[0]}; "
                               f"roots: {self._shown()})") from None
        if resolved is None or not self.inside(resolved):
            raise OutsideRoots(f"path {path!r} is outside the allowed roots ({self._shown()}); "
                               "start the server with --root to allow another folder")
        return resolved

    def check_context(self, path: str, seconds: float = WALK_SECONDS) -> Path:
        """``check(path)``, then: a regular file, or a folder whose every entry (hidden ones aside: the host never
        reads them) is a regular file or folder, or a link resolving to one inside the roots."""
        resolved = self.check(path)
        mode = _mode(resolved)
        if stat.S_ISDIR(mode):
            self._walk(resolved, path, seconds)
        elif not stat.S_ISREG(mode):
            raise OutsideRoots(f"path {path!r} is {_kind(mode)}, not a regular file or folder: refused unread")
        return resolved

    def inside(self, resolved: Path) -> bool:
        return any(resolved == root or resolved.is_relative_to(root) for root in self.folders)

    def _walk(self, folder: Path, asked: str, seconds: float) -> None:
        """Every entry under ``folder``, links not followed but checked (a link to a folder inside the roots is
        walked too, once); raises ``OutsideRoots`` at the first entry that may not be read."""
        pending, seen, deadline = [folder], {folder}, time.monotonic() + seconds
        while pending:
            current = pending.pop()
            try:
                entries = list(os.scandir(current))
            except OSError as exc:
                raise OutsideRoots(f"cannot list {current} in {asked!r}: {exc.strerror}") from None
            for entry in entries:
                if time.monotonic() > deadline:
                    raise OutsideRoots(f"folder {asked!r} is too large to check in {max(seconds, 0):g} s; "
                                       "pass a smaller folder or a file")
                if entry.name.startswith("."):
                    continue
                target, mode = Path(entry.path), _mode(Path(entry.path), follow=False)
                if stat.S_ISLNK(mode):
                    target, mode = self._link(Path(entry.path), asked)
                if stat.S_ISDIR(mode):
                    if target not in seen:
                        seen.add(target)
                        pending.append(target)
                elif not stat.S_ISREG(mode):
                    raise OutsideRoots(f"{entry.path} in {asked!r} is {_kind(mode)}, not a regular file: the "
                                       "folder is refused unread")

    def _link(self, link: Path, asked: str) -> tuple[Path, int]:
        """A link's resolved target and its mode; a link out of the roots refuses the folder."""
        try:
            target = link.resolve()
        except (OSError, RuntimeError):
            raise OutsideRoots(f"{link} in {asked!r} is a link that does not resolve (a loop): the folder is "
                               "refused unread") from None
        if not self.inside(target):
            raise OutsideRoots(f"{link} in {asked!r} is a link out of the allowed roots ({self._shown()}): the "
                               "folder is refused unread")
        if not os.path.lexists(target):
            return target, stat.S_IFREG  # dangling, pointing inside: the host skips it, nothing to read
        return target, _mode(target)

    def _shown(self) -> str:
        return ", ".join(str(p) for p in self.folders)


def _mode(path: Path, follow: bool = True) -> int:
    try:
        return os.stat(path, follow_symlinks=follow).st_mode
    except OSError as exc:
        raise OutsideRoots(f"cannot stat {path}: {exc.strerror}") from None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"
