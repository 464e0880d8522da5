"""The extraction cache: what a loader got from a file, stored under ``<home>/cache/documents/<sha256>.json``.

The key is the SHA-256 of the file's bytes (read in 1 MB blocks, so a large file is never held in memory), and an
entry remembers which loader and extractor version wrote it: a different extractor is a miss, not stale text.
The run home may sit in a project someone else made (a cloned repository can ship ``.rlm/cache``), so an entry is
used only when it carries this user's signature (``rlm_host.config.user_key``: HMAC-SHA256 with a key in the
user's config folder) over its document hash, its extractor and the SHA-256 of its text; any other entry is
ignored and replaced. An entry is one JSON header line, then the parts as JSON.

Entries are written to a temporary file and renamed, so concurrent runs never read half an entry; when the folder
outgrows its budget the least recently used entries are removed — only files named like entries, and never
through a link: a cache folder that is a symbolic link is not used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
from pathlib import Path
from typing import Any, Optional

from rlm_host.sdk.context import user_signature, verify_user_signature, write_atomic

logger = logging.getLogger("rlm.context.documents")
BLOCK = 1 << 20
FORMAT = 2
HEADER_BYTES = 64 * 1024
ENTRY = re.compile(r"^[0-9a-f]{64}\.json$")


def content_hash(path: Path) -> str:
    """The SHA-256 of the file's bytes, read block by block."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _claim(key: str, extractor: str, payload_sha256: str) -> dict[str, Any]:
    """What an entry's signature covers: the document, the extractor, and the SHA-256 of the parts' JSON."""
    return {"format": FORMAT, "document": key, "extractor": extractor, "payload": payload_sha256}


class DocumentCache:
    """``get(key, extractor)`` → the parts stored for that key by that extractor, or None; ``put`` stores them."""

    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    def get(self, key: str, extractor: str) -> Optional[list[list[str]]]:
        if not ENTRY.match(f"{key}.json") or not self._usable(create=False):
            return None
        path = self.folder / f"{key}.json"
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode) or info.st_size > self.max_bytes:
                    return None
                entry = json.loads(handle.readline(HEADER_BYTES))
                if not isinstance(entry, dict) or entry.get("extractor") != extractor:
                    return None
                start, digest = handle.tell(), hashlib.sha256()
                while block := handle.read(BLOCK):  # the text is read into memory only once it is known ours
                    digest.update(block)
                if not verify_user_signature(_claim(key, extractor, digest.hexdigest()), entry.get("signature")):
                    logger.debug("ignoring cache entry %s: not signed by this user", path)
                    return None
                handle.seek(start)
                parts = json.loads(handle.read())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # a damaged entry is a miss; the next put replaces it
            logger.debug("ignoring unreadable cache entry %s: %s", path, exc)
            return None
        if not isinstance(parts, list) or not all(isinstance(p, list) and len(p) == 2 for p in parts):
            return None
        try:
            os.utime(path, follow_symlinks=False)  # recently used: pruned last
        except OSError:
            pass
        return parts

    def put(self, key: str, extractor: str, source: Path, parts: list[list[str]]) -> None:
        """Store the parts; a cache that cannot be written costs the next run an extraction, nothing more."""
        if not ENTRY.match(f"{key}.json"):
            return
        try:
            if not self._usable(create=True):
                return
            payload = json.dumps(parts, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
            header = {"extractor": extractor, "source": source.name,
                      "signature": user_signature(_claim(key, extractor,
                                                         hashlib.sha256(payload).hexdigest()))}
            head = json.dumps(header, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
            write_atomic(self.folder / f"{key}.json", head + b"\n" + payload)
        except OSError as exc:
            logger.warning("could not cache the text of %s in %s: %s", source, self.folder, exc.strerror or exc)
            return
        self._prune()

    def _usable(self, create: bool) -> bool:
        """Whether the folder (and ``cache`` above it) is a real folder of this user's, never a link."""
        try:
            if create:
                self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            for folder in (self.folder.parent, self.folder):
                info = os.lstat(folder)
                if not stat.S_ISDIR(info.st_mode) or (hasattr(os, "getuid") and info.st_uid != os.getuid()):
                    logger.warning("not using the document cache %s: %s is not a folder of yours (a link?)",
                                   self.folder, folder)
                    return False
        except FileNotFoundError:
            return False
        return True

    def _prune(self) -> None:
        entries = []
        try:
            with os.scandir(self.folder) as found:
                for item in found:
                    if not ENTRY.match(item.name):
                        continue
                    info = item.stat(follow_symlinks=False)
                    if stat.S_ISREG(info.st_mode):
                        entries.append((info.st_mtime, info.st_size, item.path))
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, path in sorted(entries):  # oldest first
            if total <= self.max_bytes:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass


def cache_for(home: Path, max_mb: int) -> DocumentCache:
    return DocumentCache(Path(home) / "cache" / "documents", max_mb * 1024 * 1024)


__all__ = ["content_hash", "DocumentCache", "cache_for"]
