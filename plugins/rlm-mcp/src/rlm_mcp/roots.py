"""The folders a client may read: every path it passes is resolved (symlinks too) and must lie inside a root."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence


class OutsideRoots(ValueError):
    """A path that is missing or resolves outside every root."""


class Roots:
    """Allowed folders, resolved once; ``check(path)`` returns the resolved path or raises ``OutsideRoots``."""

    def __init__(self, folders: Sequence[str | Path]) -> None:
        resolved = []
        for folder in folders or [Path.cwd()]:
            path = Path(folder).expanduser().resolve(strict=True)
            if not path.is_dir():
                raise NotADirectoryError(f"--root {folder}: not a folder")
            resolved.append(path)
        self.folders: tuple[Path, ...] = tuple(resolved)

    def check(self, path: str) -> Path:
        """``path`` (relative paths are relative to the first root) resolved; it must exist inside a root."""
        raw = Path(path).expanduser()
        candidate = raw if raw.is_absolute() else self.folders[0] / raw
        try:
            resolved = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            raise OutsideRoots(f"path {path!r} does not exist (relative paths start at {self.folders[0]}; "
                               f"roots: {self._shown()})") from None  # fmt: skip
        if not any(resolved == root or resolved.is_relative_to(root) for root in self.folders):
            raise OutsideRoots(f"path {path!r} is outside the allowed roots ({self._shown()}); "
                               "start the server with --root to allow another folder")  # fmt: skip
        return resolved

    def check_model(self, model: str) -> None:
        """A client's model string must not make the server read a file outside the roots: ``scripted:PATH``,
        ``replay:FILE.jsonl`` or any ``provider:NAME`` where NAME is an existing path (a local weights file)."""
        provider, _, name = model.partition(":")
        if not name:
            return
        is_path = Path(name).expanduser()
        looks_like_file = provider == "scripted" or name.endswith(".jsonl") or "\\" in name
        try:
            exists = is_path.exists()
        except OSError:
            exists = False
        if not (looks_like_file or exists):
            return
        resolved = is_path.resolve()  # as the provider resolves it: from the server's working directory
        if not any(resolved == root or resolved.is_relative_to(root) for root in self.folders):
            raise OutsideRoots(f"model {model!r} names a file outside the allowed roots ({self._shown()})")

    def _shown(self) -> str:
        return ", ".join(str(p) for p in self.folders)
