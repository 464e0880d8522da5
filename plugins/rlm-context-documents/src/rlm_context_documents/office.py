"""Office Open XML files: a DOCX as one text (headings as ``#``, tables as ``|`` rows), a PPTX as one document per
slide (``deck.pptx#s3``: titles, text, tables, speaker notes), an XLSX as one per sheet (``book.xlsx#Budget``:
tab-separated rows, formulas as their last computed values), through python-docx, python-pptx and openpyxl.

A password-protected Office file is not a ZIP package but an OLE container; it is recognised by its signature and
named as such instead of as a damaged file.
"""

from __future__ import annotations

import datetime
import zipfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from rlm_context_documents.loader import DocumentError, DocumentLoader, corrupt

#: The OLE compound file signature: encrypted OOXML files and the old binary .doc/.xls/.ppt formats.
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _check_package(path: Path, label: str) -> None:
    with path.open("rb") as handle:
        head = handle.read(8)
    if head == OLE_SIGNATURE:
        raise DocumentError(f"the {label} file is password-protected (or an old binary Office file renamed)",
                            hint=f"open it, remove the password (or save it as {path.suffix}), and pass the new copy")  # fmt: skip
    if not zipfile.is_zipfile(path):
        raise corrupt(label, "not a ZIP package")


class DocxLoader(DocumentLoader):
    label = "DOCX"
    single = True

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import docx
        from docx.table import Table

        _check_package(path, self.label)
        try:
            document = docx.Document(str(path))
            lines: list[str] = []
            for block in document.iter_inner_content():
                if isinstance(block, Table):
                    lines.extend(_table_rows(block))
                    lines.append("")
                else:
                    lines.append(_paragraph(block))
        except (KeyError, ValueError, zipfile.BadZipFile, docx.opc.exceptions.PackageNotFoundError) as exc:
            raise corrupt(self.label, exc) from None
        yield "", "\n".join(lines).strip("\n") + "\n"


def _paragraph(paragraph: Any) -> str:
    text = paragraph.text
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading ") and style[8:].isdigit():
        return "#" * min(int(style[8:]), 6) + f" {text}"
    if style.startswith("List") and text:
        return f"- {text}"
    return text


def _table_rows(table: Any) -> Iterable[str]:
    for row in table.rows:
        yield "| " + " | ".join(cell.text.replace("\n", " ") for cell in row.cells) + " |"


class PptxLoader(DocumentLoader):
    label = "PPTX"
    part_label = "slide"

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import pptx
        from pptx.exc import PackageNotFoundError

        _check_package(path, self.label)
        try:
            presentation = pptx.Presentation(str(path))
            slides = []
            for number, slide in enumerate(presentation.slides, start=1):
                lines = list(_shape_lines(slide.shapes))
                if slide.has_notes_slide:
                    notes = slide.notes_slide.notes_text_frame
                    if notes is not None and notes.text.strip():
                        lines.append(f"Notes: {notes.text.strip()}")
                slides.append((f"s{number}", "\n".join(lines)))
        except (KeyError, ValueError, zipfile.BadZipFile, PackageNotFoundError) as exc:
            raise corrupt(self.label, exc) from None
        yield from slides


def _shape_lines(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None:  # a group
            yield from _shape_lines(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield from _table_rows(shape.table)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame and shape.text_frame.text.strip():
            yield shape.text_frame.text


class XlsxLoader(DocumentLoader):
    label = "XLSX"
    part_label = "sheet"

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import openpyxl
        from openpyxl.utils.exceptions import InvalidFileException

        _check_package(path, self.label)
        try:
            workbook = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
        except (KeyError, ValueError, zipfile.BadZipFile, InvalidFileException) as exc:
            raise corrupt(self.label, exc) from None
        try:
            sheets = [(sheet.title, "\n".join(_sheet_rows(sheet))) for sheet in workbook.worksheets]
        finally:
            workbook.close()
        yield from sheets


def _sheet_rows(sheet: Any) -> Iterator[str]:
    for row in sheet.iter_rows(values_only=True):
        cells = list(row)
        while cells and cells[-1] is None:
            cells.pop()
        if cells:
            yield "\t".join(_cell(value) for value in cells)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    return str(value).replace("\t", " ").replace("\n", " ")
