"""What every loader of this plugin shares: the cache, the naming of parts, and one clear error per bad file.

A format's loader subclasses :class:`DocumentLoader` and implements ``extract(path)``, yielding ``(part, text)``
pairs (``("p12", "…")`` for page 12) or, when ``single`` is set, one ``("", text)``; it raises
:class:`DocumentError` for a file it cannot read. ``load`` turns that into what the REPL gets: one text, or
``Documents`` named ``<file name>#<part>``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar, Iterator, Optional

from rlm_host import Documents, InputError

from rlm_context_documents.cache import cache_for, content_hash
from rlm_context_documents.settings import DocumentSettings

logger = logging.getLogger("rlm.context.documents")


class DocumentError(Exception):
    """A file this loader cannot read: ``reason`` says why, ``hint`` what the user can do."""

    def __init__(self, reason: str, hint: Optional[str] = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


class DocumentLoader:
    """Base of the format loaders: ``extract`` is the format's part, the rest is shared."""

    #: Written into cache entries; bump it when ``extract`` gives different text for the same file.
    version: ClassVar[str] = "1"
    #: The format's name in messages ("PDF", "DOCX"…).
    label: ClassVar[str] = ""
    #: One text (DOCX, HTML) rather than named parts.
    single: ClassVar[bool] = False
    #: What a part is, in messages ("page", "slide"…).
    part_label: ClassVar[str] = "part"

    def __init__(self, settings: Optional[DocumentSettings] = None, services: Any = None) -> None:
        self.settings = settings or DocumentSettings()
        home = getattr(services, "home", None)
        self._extractor: Optional[str] = None
        self.cache = cache_for(home, self.settings.cache_max_mb) if home is not None and self.settings.cache else None

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        raise NotImplementedError

    def extractor(self) -> str:
        """Which code made an entry (loader, version, library version): another one re-extracts."""
        return f"{type(self).__name__}/{self.version}"

    def _extractor_id(self) -> str:
        if self._extractor is None:
            self._extractor = self.extractor()
        return self._extractor

    def load(self, path: Path) -> Any:
        try:
            key = content_hash(path) if self.cache is not None else None
        except OSError as exc:
            raise InputError(f"cannot read context file {path}: {exc.strerror or exc}") from None
        parts = self.cache.get(key, self._extractor_id()) if key is not None else None
        if parts is None:
            parts = self._extract(path)
            if key is not None:
                self.cache.put(key, self._extractor_id(), path, parts)
        if self.single:
            return parts[0][1] if parts else ""
        return Documents([text for _, text in parts], [f"{path.name}#{part}" for part, _ in parts])

    def _extract(self, path: Path) -> list[list[str]]:
        try:
            parts = [[part, text] for part, text in self.extract(path)]
        except DocumentError as exc:
            raise InputError(f"{path}: {exc.reason}", hint=exc.hint) from None
        except OSError as exc:
            raise InputError(f"cannot read context file {path}: {exc.strerror or exc}") from None
        if not any(text.strip() for _, text in parts):
            where = "" if self.single else f" (none on any of its {len(parts)} {self.part_label}s)"
            raise InputError(f"{path}: no text in this {self.label} file{where}", hint=self.empty_hint())
        return parts

    def empty_hint(self) -> str:
        return "pass a file that holds text, or a text export of it"


def corrupt(label: str, exc: BaseException) -> DocumentError:
    """The error for a file that is not a readable ``label`` (damaged, truncated, or another format renamed)."""
    return DocumentError(f"not a readable {label} file (damaged, truncated, or another format): {exc}",
                         hint=f"open it in an application that reads {label} and save a new copy")  # fmt: skip
