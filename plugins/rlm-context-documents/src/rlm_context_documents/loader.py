"""What every loader of this plugin shares: the cache, extraction in a bounded child process, the naming of parts,
and one clear error per bad file.

A format's loader subclasses :class:`DocumentLoader` and implements ``extract(path)``, yielding ``(part, text)``
pairs (``("p12", "…")`` for page 12) or, when ``single`` is set, one ``("", text)``; it raises
:class:`DocumentError` for a file it cannot read. ``extract`` runs only in a child process
(:mod:`rlm_context_documents.extract`) with the memory, CPU and time limits of the loader's settings: the host
never parses the file's bytes itself. ``load`` turns what comes back into what the REPL gets: one text, or
``Documents`` named ``<file name>#<part>``; a limit hit, a crash or a damaged file is one ``InputError``.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

from rlm_host import InputError
from rlm_host.sdk.context import BoundedLimits, ChildFailed, Documents, LimitExceeded, run_bounded

from rlm_context_documents.cache import cache_for, content_hash
from rlm_context_documents.errors import DocumentError, corrupt, limit_error
from rlm_context_documents.settings import LIMITS, DocumentSettings

logger = logging.getLogger("rlm.context.documents")
#: Warnings from one file's extraction that reach the log (each cut to ``WARNING_CHARS``).
MAX_WARNINGS, WARNING_CHARS = 10, 500
#: The longest reason or hint taken from a child (its words are data from a process that parsed the file).
REASON_CHARS = 1000


class DocumentLoader:
    """Base of the format loaders: ``extract`` is the format's part, the rest is shared."""

    #: Written into cache entries; bump it when ``extract`` gives different text for the same file.
    version: ClassVar[str] = "2"
    #: The loader's name (its settings section ``[context_loader.<name>]``).
    name: ClassVar[str] = ""
    #: The format's name in messages ("PDF", "DOCX"…).
    label: ClassVar[str] = ""
    #: One text (DOCX, HTML) rather than named parts.
    single: ClassVar[bool] = False
    #: What a part is, in messages ("page", "slide"…).
    part_label: ClassVar[str] = "part"
    #: Modules ``extract`` imports: loaded once in the parent (never run there) or in the fork server a threaded
    #: host uses, so that each child starts with them.
    libraries: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Optional[DocumentSettings] = None, services: Any = None) -> None:
        self.settings = settings or DocumentSettings()
        home = getattr(services, "home", None)
        self._extractor: Optional[str] = None
        self.cache = cache_for(home, self.settings.cache_max_mb) if home is not None and self.settings.cache else None
        #: Characters already taken by earlier parts, and what ``extract`` had to say (in the child).
        self.taken = 0
        self.warnings: list[str] = []

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        raise NotImplementedError

    def extractor(self) -> str:
        """Which code made an entry (loader, version, library version): another one re-extracts."""
        return f"{type(self).__name__}/{self.version}"

    def _extractor_id(self) -> str:
        if self._extractor is None:
            self._extractor = self.extractor()
        return self._extractor

    def check_part(self, chars: int) -> None:
        """Stop a part that has grown past ``max_part_chars``, or the file past ``max_chars`` (called by formats
        that build a part piece by piece, so a huge one stops early)."""
        s = self.settings
        if chars > s.max_part_chars:
            raise limit_error(f"a {self.part_label} holds more than max_part_chars = {s.max_part_chars:,} characters",
                              "max_part_chars", self.name)
        if self.taken + chars > s.max_chars:
            raise limit_error(f"the text runs past max_chars = {s.max_chars:,} characters", "max_chars", self.name)

    def load(self, path: Path) -> Any:
        try:
            key = content_hash(path) if self.cache is not None else None
        except OSError as exc:
            raise InputError(f"cannot read context file {path}: {exc.strerror or exc}") from None
        parts = self.cache.get(key, self._extractor_id()) if self.cache is not None and key is not None else None
        if parts is None:
            parts = self._extract(path)
            if self.cache is not None and key is not None:
                self.cache.put(key, self._extractor_id(), path, parts)
        if self.single:
            return parts[0][1] if parts else ""
        return Documents([text for _, text in parts], [f"{path.name}#{part}" for part, _ in parts])

    def _extract(self, path: Path) -> list[list[str]]:
        """The parts of ``path``, extracted in a bounded child process."""
        from rlm_context_documents.extract import extract_file

        s = self.settings
        limits = BoundedLimits(memory_mb=s.memory_mb, cpu_seconds=s.cpu_seconds, wall_seconds=s.wall_seconds,
                                       output_bytes=s.output_bytes())
        _warm(self.libraries)
        try:
            result = run_bounded(extract_file, f"{type(self).__module__}:{type(self).__qualname__}",
                                         str(path), s.model_dump(), limits=limits,
                                         preload=("rlm_context_documents.extract", type(self).__module__,
                                                  *self.libraries))
        except LimitExceeded as exc:
            setting, what = LIMITS[exc.limit]
            raise InputError(f"{path}: reading it stopped at {what} ({setting} = {getattr(s, setting):,}): it "
                             f"{exc.message}", hint=limit_error("", setting, self.name).hint) from None
        except OSError as exc:  # no process could be started (a process limit, no memory left)
            raise InputError(f"{path}: cannot start a process to read it: {exc.strerror or exc}",
                             hint="free some memory or processes, then try again") from None
        except ChildFailed as exc:
            if exc.signal:
                raise InputError(f"{path}: the {self.label} reader crashed ({exc.signal}): a damaged file, or one "
                                 f"that needs more than memory_mb = {s.memory_mb:,}",
                                 hint=corrupt(self.label, "").hint) from None
            raise InputError(f"{path}: {corrupt(self.label, exc.message).reason}",
                             hint=corrupt(self.label, "").hint) from None
        return self._accept(path, result)

    def _accept(self, path: Path, result: Any) -> list[list[str]]:
        """What the child sent, checked as untrusted data: an error, or parts within the caps."""
        s = self.settings
        if isinstance(result, dict) and isinstance(result.get("error"), dict):
            error = result["error"]
            reason, hint = str(error.get("reason", ""))[:REASON_CHARS], error.get("hint")
            hint = str(hint)[:REASON_CHARS] if hint else ""
            if error.get("io"):
                raise InputError(f"cannot read context file {path}: {reason}")
            raise InputError(f"{path}: {reason}", hint=hint)
        parts = result.get("parts") if isinstance(result, dict) else None
        if (not isinstance(parts, list) or len(parts) > s.max_parts
                or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in parts)
                or sum(len(text) for _, text in parts) > s.max_chars):
            raise InputError(f"{path}: {corrupt(self.label, 'the reader sent back malformed parts').reason}")
        warnings = result.get("warnings")
        for warning in (warnings if isinstance(warnings, list) else [])[:MAX_WARNINGS]:
            logger.warning("%s: %s", path, str(warning)[:WARNING_CHARS])
        if not any(text.strip() for _, text in parts):
            where = "" if self.single else f" (none on any of its {len(parts)} {self.part_label}s)"
            raise InputError(f"{path}: no text in this {self.label} file{where}", hint=self.empty_hint())
        return parts

    def empty_hint(self) -> str:
        return "pass a file that holds text, or a text export of it"


_warmed: set[str] = set()


def _warm(modules: tuple[str, ...]) -> None:
    """Import a format's libraries in this process once (importing reads no document), so forked children
    start with them loaded; one that fails to import fails in the child instead, with its message."""
    for module in modules:
        if module not in _warmed:
            _warmed.add(module)
            try:
                importlib.import_module(module)
            except Exception:  # noqa: BLE001 - the child reports it
                pass


__all__ = ["DocumentLoader", "DocumentError", "corrupt", "limit_error"]
