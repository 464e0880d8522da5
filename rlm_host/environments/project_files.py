"""The file actions the host does for the model, confined to the run's project folder (``ProjectFiles``: the
dspy environment's and the harness's read, write, patch, list and search).

The paths come from the model and are hostile. A path is refused when it is empty or holds a NUL, names a
parent (``..``), is absolute outside the folder, or resolves (symlinks followed) outside it. Reads and writes then
walk the resolved path one folder at a time from the project folder's descriptor, never through a link, and
without blocking (a FIFO would hang a plain open) (``rlm_host.sandbox.workspace.open_in_workspace``): code in the
sandbox swapping a checked folder for a symlink between check and open reaches nothing outside. What is read
must be a regular file. Writes never touch version-control or tool metadata (``.git``, ``.envrc``…). Writes are
size-limited; reads are line ranges of a size-limited file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from rlm_host.sandbox.workspace import WorkspaceRefused, check_workspace_write, open_in_workspace

#: A write larger than this is refused.
MAX_WRITE_BYTES = 512 * 1024
#: A file larger than this is not read.
MAX_READ_BYTES = 2 * 1024 * 1024
#: Lines shown by one read_file without an explicit range.
DEFAULT_READ_LINES = 200
#: Entries listed by one list_tree.
MAX_TREE_ENTRIES = 500
SKIPPED_DIRS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", "node_modules", ".rlm"}


class PathRefused(WorkspaceRefused):
    """A path the model may not use; the message says why (shown to the model)."""


class ProjectFiles:
    """The project folder of a run; every method takes the model's path strings."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    # ------------------------------------------------------------------ paths

    def resolve(self, raw: Any) -> Path:
        """``raw`` as a path inside the folder (it may not exist yet); PathRefused otherwise."""
        text = str(raw if raw is not None else "").strip()
        if not text:
            raise PathRefused("no path given")
        if "\x00" in text:
            raise PathRefused("a path may not contain NUL")
        if ".." in PurePosixPath(text.replace("\\", "/")).parts:
            raise PathRefused(f"{text!r}: '..' is not allowed; paths are relative to the project folder")
        candidate = Path(text)
        if candidate.is_absolute():
            try:
                candidate = candidate.relative_to(self.root)
            except ValueError:
                raise PathRefused(f"{text!r} is outside the project folder") from None
        resolved = (self.root / candidate).resolve()
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise PathRefused(f"{text!r} leads outside the project folder (a symlink?)")
        return resolved

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path != self.root else "."

    # ------------------------------------------------------------------ files

    def read_text(self, raw: Any) -> tuple[Path, str]:
        path = self.resolve(raw)
        with os.fdopen(self._open(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_READ_BYTES:
                raise PathRefused(f"{self.relative(path)} is {size:,} bytes; the limit is {MAX_READ_BYTES:,}")
            data = handle.read(MAX_READ_BYTES + 1)
        return path, data.decode("utf-8", errors="replace")

    def read_lines(self, raw: Any, start_line: Any = 1, end_line: Any = None) -> dict[str, Any]:
        """Lines ``start_line``..``end_line`` (1-based, inclusive) with their numbers."""
        path, text = self.read_text(raw)
        lines = text.splitlines()
        start = max(1, _int(start_line, 1))
        end = min(len(lines), _int(end_line, start + DEFAULT_READ_LINES - 1))
        shown = "\n".join(f"{number:>5}  {lines[number - 1]}" for number in range(start, end + 1))
        return {"path": self.relative(path), "total_lines": len(lines), "start_line": start, "end_line": end,
                "content": shown}

    def write_text(self, raw: Any, content: Any) -> dict[str, Any]:
        """Create or replace a file (parent folders made inside the project)."""
        if not isinstance(content, str):
            raise PathRefused("'content' must be a string")
        data = content.encode("utf-8", errors="replace")
        if len(data) > MAX_WRITE_BYTES:
            raise PathRefused(f"the content is {len(data):,} bytes; the limit is {MAX_WRITE_BYTES:,}")
        path = self.resolve(raw)
        if path == self.root:
            raise PathRefused("a file path is needed, not the project folder")
        try:
            check_workspace_write(path.relative_to(self.root))
        except WorkspaceRefused as exc:
            raise PathRefused(str(exc)) from None
        existed = path.exists() or path.is_symlink()
        fd = self._open(path, os.O_WRONLY | os.O_CREAT)
        try:
            os.ftruncate(fd, 0)
            os.write(fd, data)
        finally:
            os.close(fd)
        return {"path": self.relative(path), "bytes": len(data), "created": not existed}

    def patch(self, raw: Any, search: Any = None, replace: Any = None, content: Any = None) -> dict[str, Any]:
        """Replace the one occurrence of ``search`` with ``replace``, or rewrite the file with ``content``."""
        if content is not None:
            return {**self.write_text(raw, content), "mode": "rewrite"}
        if not isinstance(search, str) or not search or not isinstance(replace, str):
            raise PathRefused("patch_file needs 'search' and 'replace' strings (or 'content' for a full rewrite)")
        path, text = self.read_text(raw)
        count = text.count(search)
        if count != 1:
            raise PathRefused(f"'search' occurs {count} times in {self.relative(path)}; it must occur exactly once "
                              "(give more surrounding lines)")
        return {**self.write_text(raw, text.replace(search, replace, 1)), "mode": "search_replace"}

    def list_tree(self, raw: Any = ".", depth: Any = 2) -> dict[str, Any]:
        """Folders and files under ``raw`` down to ``depth`` levels (symlinks listed, never followed)."""
        base = self.resolve(raw or ".")
        if not base.is_dir():
            raise PathRefused(f"{self.relative(base)} is not a folder")
        limit = max(1, min(_int(depth, 2), 6))
        entries: list[str] = []
        truncated = False
        for folder, dirs, files in os.walk(base, followlinks=False):
            level = len(Path(folder).relative_to(base).parts)
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS) if level + 1 < limit else []
            for name in sorted(files) + [f"{d}/" for d in dirs]:
                if len(entries) >= MAX_TREE_ENTRIES:
                    truncated = True
                    break
                entries.append(self.relative(Path(folder) / name.rstrip("/")) + ("/" if name.endswith("/") else ""))
        return {"path": self.relative(base), "depth": limit, "entries": sorted(entries), "truncated": truncated}

    def python_files(self) -> list[str]:
        """The project's ``.py`` files (relative paths), skipping caches and virtual environments."""
        found = []
        for folder, dirs, files in os.walk(self.root, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
            found += [self.relative(Path(folder) / f) for f in sorted(files) if f.endswith(".py")]
        return sorted(found)

    # ------------------------------------------------------------------ the checked open

    def _open(self, path: Path, flags: int = os.O_RDONLY) -> int:
        """A descriptor of the regular file ``path`` inside the folder (a write makes it and its folders), reached
        one folder at a time from the folder's descriptor, never through a link (``open_in_workspace``); never a
        device, FIFO or socket."""
        writing = flags != os.O_RDONLY
        try:
            fd = open_in_workspace(self.root, path.relative_to(self.root).as_posix(), flags, make_parents=writing)
        except FileNotFoundError:
            raise PathRefused(f"{self.relative(path)} does not exist") from None
        except IsADirectoryError:
            raise PathRefused(f"{self.relative(path)} is a folder") from None
        except OSError as exc:  # a link or a file met on the way (ELOOP, ENOTDIR): a race or a trap; EINVAL: the
            # project folder itself
            why = " is not a regular file" if exc.errno == errno.EINVAL else f": {exc.strerror or exc}"
            raise PathRefused(f"{self.relative(path)}{why}" + (" (paths are written without following links)"
                                                                if writing else "")) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PathRefused(f"{self.relative(path)} is not a regular file")
        os.set_blocking(fd, True)
        return fd


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
