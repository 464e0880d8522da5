"""The extraction cache: what a loader got from a file, stored as JSON under ``<home>/cache/documents/``.

The key is the SHA-256 of the file's bytes (read in 1 MB blocks, so a large file is never held in memory), and an
entry remembers which loader and extractor version wrote it: a different extractor is a miss, not stale text.
Entries are written to a temporary file and renamed, so concurrent runs never read half an entry; when the folder
outgrows its budget the least recently used entries are removed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Optional

logger = logging.getLogger("rlm.context.documents")
BLOCK = 1 << 20


def content_hash(path: Path) -> str:
    """The SHA-256 of the file's bytes, read block by block."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


class DocumentCache:
    """``get(key, extractor)`` → the parts stored for that key by that extractor, or None; ``put`` stores them."""

    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    def get(self, key: str, extractor: str) -> Optional[list[list[str]]]:
        path = self.folder / f"{key}.json"
        try:
            with path.open(encoding="utf-8") as handle:
                entry = json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a damaged entry is a miss; the next put replaces it
            logger.debug("ignoring unreadable cache entry %s: %s", path, exc)
            return None
        if not isinstance(entry, dict) or entry.get("extractor") != extractor or not isinstance(entry.get("parts"), list):
            return None
        os.utime(path)  # recently used: pruned last
        return entry["parts"]

    def put(self, key: str, extractor: str, source: Path, parts: list[list[str]]) -> None:
        """Store the parts; a cache that cannot be written costs the next run an extraction, nothing more."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=self.folder, suffix=".tmp", delete=False) as tmp:
                json.dump({"extractor": extractor, "source": source.name, "parts": parts}, tmp, ensure_ascii=False)
            os.replace(tmp.name, self.folder / f"{key}.json")
        except OSError as exc:
            logger.warning("could not cache the text of %s in %s: %s", source, self.folder, exc.strerror or exc)
            try:
                os.unlink(tmp.name)
            except (OSError, NameError):
                pass
            return
        self._prune()

    def _prune(self) -> None:
        entries = []
        for path in self.folder.glob("*.json"):
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):  # oldest first
            if total <= self.max_bytes:
                break
            try:
                path.unlink()
                total -= size
            except OSError:
                pass


def cache_for(home: Path, max_mb: int) -> DocumentCache:
    return DocumentCache(Path(home) / "cache" / "documents", max_mb * 1024 * 1024)


__all__ = ["content_hash", "DocumentCache", "cache_for"]
