"""``[context_loader.<name>]`` settings, the same for every loader of this plugin: the cache and the limits of
the child process each file is read in (``rlm plugins doctor`` lists them)."""

from __future__ import annotations

from typing import Any, Iterable, Optional

from pydantic import BaseModel, ConfigDict, Field

MB = 1024 * 1024


class DocumentSettings(BaseModel):
    """``cache``: keep what a file gave under ``<home>/cache/documents`` (keyed by its content hash, signed with
    this user's key); ``cache_max_mb``: the oldest entries go when the folder grows past this.

    Each file is read in a child process that may use ``memory_mb`` of memory, ``cpu_seconds`` of CPU time and
    ``wall_seconds`` of time, and give at most ``max_chars`` characters of text in all, ``max_part_chars`` in one
    part (page, slide, sheet, chapter) and ``max_parts`` parts; a ZIP package (DOCX, PPTX, XLSX, EPUB) may
    unpack to at most ``max_unzipped_mb``. A file past any of them is one error naming the limit."""

    model_config = ConfigDict(extra="forbid")

    cache: bool = True
    cache_max_mb: int = Field(default=1024, ge=1)
    memory_mb: int = Field(default=1024, ge=64, le=65536)
    cpu_seconds: int = Field(default=120, ge=1, le=86400)
    wall_seconds: int = Field(default=180, ge=1, le=86400)
    max_chars: int = Field(default=50_000_000, ge=1, le=2_000_000_000)
    max_part_chars: int = Field(default=20_000_000, ge=1, le=2_000_000_000)
    max_parts: int = Field(default=20_000, ge=1, le=10_000_000)
    max_unzipped_mb: int = Field(default=512, ge=1, le=65536)

    def output_bytes(self) -> int:
        """The most the child may send back: every character escaped in JSON (6 bytes), a name per part."""
        return 6 * self.max_chars + 128 * self.max_parts + MB


#: What each limit is, in the error a file that goes past it gets.
LIMITS = {
    "memory": ("memory_mb", "the memory limit"),
    "cpu": ("cpu_seconds", "the CPU-time limit"),
    "wall": ("wall_seconds", "the time limit"),
    "output": ("max_chars", "the output limit"),
}


def describe(settings: DocumentSettings) -> str:
    """The limits and the cache in one line, as ``rlm plugins doctor`` shows them."""
    s = settings
    cache = f"cache ≤ {s.cache_max_mb} MB" if s.cache else "no cache"
    return (f"limits: {s.memory_mb} MB memory, {s.cpu_seconds} s CPU, {s.wall_seconds} s wall; "
            f"≤ {s.max_chars:,} chars ({s.max_part_chars:,} per part), ≤ {s.max_parts:,} parts, "
            f"ZIP ≤ {s.max_unzipped_mb} MB unpacked; {cache}")


def readiness(modules: Iterable[str], settings: Optional[Any] = None) -> Any:
    """The doctor's line for a loader: its libraries importable, and the limits it reads files under."""
    import importlib.util

    from rlm_host import Readiness

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        return Readiness(False, "missing module(s): " + ", ".join(missing), "pip install rlm-context-documents")
    current = settings if isinstance(settings, DocumentSettings) else DocumentSettings()
    return Readiness(True, ("requirements importable; " if modules else "") + describe(current))
