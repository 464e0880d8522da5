"""Which context loader reads which file: the registered ``ContextLoaderSpec`` s by suffix, else by the media
type the file's content shows (``media_type``), built once each."""

from __future__ import annotations

import functools
import mimetypes
import re
import zipfile
import zlib
from pathlib import Path
from typing import Any, Optional

from rlm_host.context import ContextLoader, LoaderLookup, load_context
from rlm_host.errors import InputError
from rlm_host.services import HostServices


def loader_lookup(host: Any, loaded: Any, home: Path) -> LoaderLookup:
    """``loader_for(path)``: the highest-priority loader claiming the file's suffix (the longest suffix first, so
    ``.tar.gz`` beats ``.gz``), else the catch-all loaders (no suffixes); each built once with its settings."""
    specs = list(host.context_loaders())

    @functools.cache
    def build(spec: Any) -> ContextLoader:
        ready = spec.readiness()
        if not ready.ok:  # e.g. its PDF library is missing: say so instead of failing mid-load
            raise InputError(f"the {spec.name!r} context loader cannot run here: {ready.detail}", hint=ready.hint or "")
        return spec.create(loaded.component("context_loader", spec.name), HostServices(home=home))

    def loader_for(path: Path) -> Optional[ContextLoader]:
        name = path.name.lower()
        claiming = [s for s in specs if any(name.endswith(suffix) for suffix in s.suffixes)]
        if claiming:
            return build(max(claiming, key=lambda s: (max(len(x) for x in s.suffixes if name.endswith(x)), s.priority)))
        kind = (media_type(path) or "").lower() if any(s.mime_types for s in specs) else ""  # the file's type
        by_type = [s for s in specs if kind and kind in s.mime_types]  # is sniffed only when a loader claims types
        if by_type:
            return build(max(by_type, key=lambda s: s.priority))
        fallback = [s for s in specs if not s.suffixes]
        return build(max(fallback, key=lambda s: s.priority)) if fallback else None

    return loader_for


SNIFF = 4096
OOXML_MAIN = re.compile(r"(application/vnd\.[\w.-]+?)\.main\+xml")


def media_type(path: Path) -> Optional[str]:
    """The media type a file's first bytes show (PDF, EPUB, Office Open XML; HTML only without a suffix, so a
    ``.txt`` of markup stays text), else the one its name suggests, else None; never raises on an unreadable
    file (its loader will say what is wrong)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF)
    except OSError:
        return None
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"PK\x03\x04"):
        return _zip_media_type(path)
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not path.suffix and start.startswith((b"<!doctype html", b"<html")):  # a page saved without a suffix
        return "text/html"
    return mimetypes.guess_type(path.name)[0]


def _zip_media_type(path: Path) -> Optional[str]:
    """The format a zip package declares; reads at most a few hundred KB of one entry (a zip bomb stays shut)."""
    try:
        with zipfile.ZipFile(path) as package:
            names = set(package.namelist())
            if "mimetype" in names:  # EPUB, OpenDocument: the type is the first entry's content
                return _head(package, "mimetype", 200).decode("ascii", errors="replace").strip() or None
            if "[Content_Types].xml" in names:  # Office Open XML: the main part's content type names the format
                types = _head(package, "[Content_Types].xml", 200_000).decode("utf-8", errors="replace")
                found = OOXML_MAIN.search(types)
                return found.group(1) if found else None
    except (zipfile.BadZipFile, OSError, KeyError, RuntimeError, ValueError, EOFError, zlib.error):
        return None
    return "application/zip"


def _head(package: zipfile.ZipFile, name: str, size: int) -> bytes:
    """The first ``size`` bytes of an entry, decompressed no further."""
    with package.open(name) as entry:
        return entry.read(size)


def load_context_with_loaders(paths: list[str], host: Any, loaded: Any, home: Path, **options: Any) -> Any:
    """``load_context`` with the installed loaders (what ``rlm run --context`` and the Python API use)."""
    return load_context(paths, loader_for=loader_lookup(host, loaded, home), **options)
