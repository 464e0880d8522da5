"""HTML and EPUB: an HTML page as its readable text (no markup, scripts or styles; headings as ``#``, list items
as ``-``), an EPUB as one document per chapter in reading order (``book.epub#c4``), each chapter's XHTML read the
same way. Both use only the standard library (``html.parser``, ``zipfile``, ``xml.etree``). Markup is fed to the
parser in pieces, so a page past the loader's text caps stops early; an EPUB's package is checked before it is
read (``zipsafe``), every entry is read with a cap on the bytes it really unpacks to, and a chapter its spine
lists many times is read once.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Callable, Iterator, Optional
from xml.etree import ElementTree

from rlm_context_documents.errors import DocumentError, corrupt
from rlm_context_documents.loader import DocumentLoader
from rlm_context_documents.zipsafe import MB, check_package, read_member

SKIPPED = {"script", "style", "noscript", "template", "svg", "math", "head", "iframe", "object"}
BLOCKS = {"p", "div", "section", "article", "header", "footer", "main", "aside", "nav", "blockquote", "pre",
          "table", "tr", "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form", "hr", "br", "li",
          "h1", "h2", "h3", "h4", "h5", "h6", "title", "address", "details", "summary"}
CHARSET = re.compile(rb"""<meta[^>]{0,1000}charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.IGNORECASE)
#: Characters of markup fed to the parser at a time: the text caps are checked between pieces (large pieces, as
#: ``html.parser`` searches an unfinished construct again from its start at each piece).
FEED = 8 << 20
#: Bytes of small EPUB files (container, package document, encryption list) read at most.
SMALL_ENTRY = 16 * MB


class _TextParser(HTMLParser):
    """Collects the text a reader sees; block elements start new lines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.size = 0  # characters of text taken so far
        self.lines: list[str] = []
        self.current: list[str] = []
        self.skipping = 0
        self.title: list[str] = []
        self.in_title = False
        self.preformatted = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self.in_title = True
            return
        if tag in SKIPPED:
            self.skipping += 1
            return
        if tag in BLOCKS:
            self._break()
        if tag == "pre":
            self.preformatted += 1
        if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
            self.current.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.current.append("- ")
        elif tag in ("td", "th") and self.current:
            self.current.append(" | ")

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        if tag in ("br", "hr"):
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in BLOCKS:
            if tag == "pre":
                self.preformatted = max(0, self.preformatted - 1)
            self._break()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
            self.size += len(data)
        elif not self.skipping:
            self.current.append(data if self.preformatted else re.sub(r"\s+", " ", data))
            self.size += len(self.current[-1])

    def _break(self) -> None:
        line = "".join(self.current)
        self.current = []
        line = line if self.preformatted else line.strip()
        if line.strip(" #-|"):
            self.lines.append(line)

    def text(self) -> str:
        self._break()
        title = re.sub(r"\s+", " ", "".join(self.title)).strip()
        lines = ([f"# {title}"] if title and (not self.lines or title not in self.lines[0]) else []) + self.lines
        return "\n".join(lines) + ("\n" if lines else "")


def html_text(markup: str, check: Optional[Callable[[int], None]] = None) -> str:
    """The readable text of an HTML document; ``check(chars so far)`` may stop it between pieces of markup."""
    parser = _TextParser()
    for start in range(0, len(markup), FEED):
        parser.feed(markup[start : start + FEED])
        if check is not None:
            check(parser.size)
    parser.close()
    return parser.text()


def decode_html(data: bytes) -> str:
    """Bytes of an HTML file as text: a BOM, else a ``<meta charset>``, else UTF-8 (undecodable bytes replaced)."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    found = CHARSET.search(data[:4096])
    encoding = found.group(1).decode("ascii") if found else "utf-8"
    try:
        return data.decode(encoding, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


class HtmlLoader(DocumentLoader):
    name = "html"
    label = "HTML"
    single = True

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        data = path.read_bytes()
        if b"\x00" in data[:8192] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise corrupt(self.label, "binary content")
        yield "", html_text(decode_html(data), self.check_part)


CONTAINER = "META-INF/container.xml"
OPF_NS = "{http://www.idpf.org/2007/opf}"
CONTAINER_NS = "{urn:oasis:names:tc:opendocument:xmlns:container}"


class EpubLoader(DocumentLoader):
    name = "epub"
    label = "EPUB"
    part_label = "chapter"

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        if not zipfile.is_zipfile(path):
            raise corrupt(self.label, "not a ZIP package")
        limit = self.settings.max_unzipped_mb * MB
        check_package(path, self.label, limit, self.name)
        try:
            with zipfile.ZipFile(path) as book:
                names = set(book.namelist())

                def read(name: str, cap: int = limit) -> bytes:
                    return read_member(book, name, cap, self.label, self.name)

                if "META-INF/encryption.xml" in names and _has_drm(read("META-INF/encryption.xml", SMALL_ENTRY)):
                    raise DocumentError("the EPUB's chapters are encrypted (DRM)",
                                        hint="pass a copy without DRM, or a text export of the book")
                for number, href in enumerate(_spine(read, names), start=1):
                    yield f"c{number}", html_text(decode_html(read(href)), self.check_part)
        except (KeyError, zipfile.BadZipFile, ElementTree.ParseError, EOFError) as exc:
            raise corrupt(self.label, exc) from None


def _spine(read: Callable[..., bytes], names: set[str]) -> list[str]:
    """The chapter files in reading order, each once, from the package document the container points to."""
    if CONTAINER not in names:
        raise KeyError(f"no {CONTAINER}")
    rootfile = ElementTree.fromstring(read(CONTAINER, SMALL_ENTRY)).find(f".//{CONTAINER_NS}rootfile")
    if rootfile is None or not rootfile.get("full-path"):
        raise KeyError("the container names no package document")
    opf_path = rootfile.get("full-path", "")
    package = ElementTree.fromstring(read(opf_path, SMALL_ENTRY))
    base = posixpath.dirname(opf_path)
    manifest = {item.get("id"): item.get("href", "") for item in package.iter(f"{OPF_NS}item")}
    chapters: dict[str, None] = {}  # ordered, each chapter once however often the spine lists it
    for itemref in package.iter(f"{OPF_NS}itemref"):
        href = manifest.get(itemref.get("idref"))
        if href:
            full = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
            if full in names:
                chapters.setdefault(full)
    if not chapters:
        raise KeyError("the package document lists no chapters")
    return list(chapters)


def _has_drm(encryption: bytes) -> bool:
    """Font obfuscation also uses encryption.xml; only encrypted content documents make a book unreadable."""
    text = encryption.decode("utf-8", errors="replace")
    return bool(re.search(r"""CipherReference[^>]+URI=["'][^"']+\.x?html?["']""", text))
