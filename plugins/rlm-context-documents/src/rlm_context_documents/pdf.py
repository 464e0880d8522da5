"""PDF: one document per page (``report.pdf#p12``), through PDFium (pypdfium2).

PDFium was measured here against pypdf, pdfminer.six, pdfplumber and markitdown on a 500-page text PDF: all
gave faithful text, PDFium in 0.13 s against 0.49 s for pypdf and 6–18 s for the others (``benchmarks/
documents.py`` prints the comparison). Pages are read one at a time from the file, never the whole file at once;
PDFium keeps what it parsed (a scanned page's image data too) until the document is closed, so the document is
reopened whenever the process has grown by ``REOPEN_GROWTH`` since it was opened: a 120 MB file of images then
costs ~40 MB while loading, not 120. PDFium is not thread-safe, so extractions in one process take turns. It runs
in the loader's child process, whose memory limit turns a file built to exhaust it (nested form XObjects) into
one error; a page count past ``max_parts`` is refused before any page is read.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Iterator

from rlm_context_documents.errors import DocumentError, corrupt, limit_error
from rlm_context_documents.loader import DocumentLoader

logger = logging.getLogger("rlm.context.documents")
_PDFIUM = threading.Lock()
#: Pages named in the warning about pages without text.
LISTED = 10
#: Growth of the process (bytes) after which the document is reopened to release what PDFium holds.
REOPEN_GROWTH = 32 * 1024 * 1024
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _resident() -> int:
    """The process's resident bytes (Linux; 0 elsewhere, where documents are simply not reopened)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0


class PdfLoader(DocumentLoader):
    name = "pdf"
    label = "PDF"
    part_label = "page"
    libraries = ("pypdfium2",)

    def extractor(self) -> str:
        from importlib.metadata import version

        return f"{super().extractor()} pypdfium2/{version('pypdfium2')}"

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import pypdfium2 as pdfium

        def open_document():
            try:
                return pdfium.PdfDocument(str(path)), _resident()
            except pdfium.PdfiumError as exc:
                raise _open_error(exc) from None

        with _PDFIUM:
            document, opened_at = open_document()
            empty = []
            try:
                count = len(document)
                if count > self.settings.max_parts:
                    raise limit_error(f"the PDF has {count:,} pages, more than max_parts = "
                                      f"{self.settings.max_parts:,}", "max_parts", self.name)
                for index in range(count):
                    if opened_at and _resident() - opened_at > REOPEN_GROWTH:
                        document.close()
                        document, opened_at = open_document()
                    page = document[index]
                    try:
                        textpage = page.get_textpage()
                        text = textpage.get_text_bounded()
                        textpage.close()
                    except pdfium.PdfiumError as exc:
                        raise corrupt("PDF", f"page {index + 1}: {exc}") from None
                    finally:
                        page.close()
                    if not text.strip():
                        empty.append(f"p{index + 1}")
                    yield f"p{index + 1}", text.replace("\r\n", "\n").replace("\r", "\n")
            finally:
                document.close()
        if empty and len(empty) < count:
            self.warnings.append(f"{len(empty)} of {count} pages have no text layer (scanned?): "
                                 + ", ".join(empty[:LISTED]) + (", …" if len(empty) > LISTED else ""))

    def empty_hint(self) -> str:
        return ("it has no text layer (a scan?): run OCR first (for instance `ocrmypdf in.pdf out.pdf`) "
                "and pass the result")


def _open_error(exc: Exception) -> DocumentError:
    message = str(exc)
    if "password" in message.lower():
        return DocumentError("the PDF is encrypted (it needs a password to open)",
                             hint="pass a decrypted copy, for instance "
                                  "`qpdf --decrypt --password=… in.pdf out.pdf`")
    return corrupt("PDF", message)
