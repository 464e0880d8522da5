"""Office Open XML files: a DOCX as one text (headings as ``#``, tables as ``|`` rows), a PPTX as one document per
slide (``deck.pptx#s3``: titles, text, tables, speaker notes), an XLSX as one per sheet (``book.xlsx#Budget``:
tab-separated rows, formulas as their last computed values), through python-docx, python-pptx and openpyxl.

A password-protected Office file is not a ZIP package but an OLE container; it is recognised by its signature and
named as such instead of as a damaged file. What a package declares never drives the work: its unpacked size is
checked first (``zipsafe``), a table cell's declared span is not repeated, a slide or sheet listed twice is read
once, and a sheet's rows are the cells its XML holds, not the ``A1:XFD1048576`` its dimension claims.
"""

from __future__ import annotations

import datetime
import zipfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from rlm_context_documents.errors import DocumentError, corrupt
from rlm_context_documents.loader import DocumentLoader
from rlm_context_documents.zipsafe import MB, check_package

#: The OLE compound file signature: encrypted OOXML files and the old binary .doc/.xls/.ppt formats.
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _check_package(path: Path, loader: DocumentLoader) -> None:
    with path.open("rb") as handle:
        head = handle.read(8)
    if head == OLE_SIGNATURE:
        raise DocumentError(f"the {loader.label} file is password-protected (or an old binary Office file renamed)",
                            hint=f"open it, remove the password (or save it as {path.suffix}), "
                                 "and pass the new copy")
    if not zipfile.is_zipfile(path):
        raise corrupt(loader.label, "not a ZIP package")
    check_package(path, loader.label, loader.settings.max_unzipped_mb * MB, loader.name)


class DocxLoader(DocumentLoader):
    name = "docx"
    label = "DOCX"
    single = True
    libraries = ("docx",)

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
        from docx.table import Table

        _check_package(path, self)
        try:
            document = docx.Document(str(path))
            lines: list[str] = []
            size, styles = 0, dict[Optional[str], str]()
            for block in document.iter_inner_content():
                added = [*_docx_rows(block), ""] if isinstance(block, Table) else [_paragraph(block, styles)]
                lines.extend(added)
                size += sum(len(line) + 1 for line in added)
                self.check_part(size)
        except (KeyError, ValueError, zipfile.BadZipFile, PackageNotFoundError) as exc:
            raise corrupt(self.label, exc) from None
        yield "", "\n".join(lines).strip("\n") + "\n"


def _paragraph(paragraph: Any, styles: dict[Optional[str], str]) -> str:
    """A paragraph's text, marked by its style (each style looked up once: the lookup scans every style)."""
    text = paragraph.text
    style_id = paragraph._p.style
    if style_id not in styles:
        styles[style_id] = (paragraph.style.name if paragraph.style is not None else "") or ""
    style = styles[style_id]
    if style == "Title":
        return f"# {text}"
    if style.startswith("Heading ") and style[8:].isdigit():
        return "#" * min(int(style[8:]), 6) + f" {text}"
    if style.startswith("List") and text:
        return f"- {text}"
    return text


def _docx_rows(table: Any) -> Iterable[str]:
    """A Word table's rows, one cell per ``<w:tc>`` present: a declared span is not repeated, and a cell that
    continues a vertical merge is empty (python-docx's ``row.cells`` would repeat both)."""
    from docx.table import _Cell

    for row in table.rows:
        cells = ("" if tc.vMerge == "continue" else "\n".join(p.text for p in _Cell(tc, table).paragraphs)
                 for tc in row._tr.tc_lst)
        yield "| " + " | ".join(text.replace("\n", " ") for text in cells) + " |"


def _table_rows(table: Any) -> Iterable[str]:
    for row in table.rows:
        yield "| " + " | ".join(cell.text.replace("\n", " ") for cell in row.cells) + " |"


class PptxLoader(DocumentLoader):
    name = "pptx"
    label = "PPTX"
    part_label = "slide"
    libraries = ("pptx",)

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import pptx
        from pptx.exc import PackageNotFoundError

        _check_package(path, self)
        try:
            presentation = pptx.Presentation(str(path))
            seen: set[str] = set()
            for slide in presentation.slides:
                if str(slide.part.partname) in seen:  # listed twice: read once
                    continue
                seen.add(str(slide.part.partname))
                lines = list(_shape_lines(slide.shapes))
                if slide.has_notes_slide:
                    notes = slide.notes_slide.notes_text_frame
                    if notes is not None and notes.text.strip():
                        lines.append(f"Notes: {notes.text.strip()}")
                yield f"s{len(seen)}", "\n".join(lines)
        except (KeyError, ValueError, zipfile.BadZipFile, PackageNotFoundError) as exc:
            raise corrupt(self.label, exc) from None


def _shape_lines(shapes: Any) -> Iterator[str]:
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None:  # a group
            yield from _shape_lines(shape.shapes)
        elif getattr(shape, "has_table", False) and shape.has_table:
            yield from _table_rows(shape.table)
        elif getattr(shape, "has_text_frame", False) and shape.has_text_frame and shape.text_frame.text.strip():
            yield shape.text_frame.text


class XlsxLoader(DocumentLoader):
    name = "xlsx"
    label = "XLSX"
    part_label = "sheet"
    libraries = ("openpyxl",)

    def extract(self, path: Path) -> Iterator[tuple[str, str]]:
        import openpyxl
        from openpyxl.utils.exceptions import InvalidFileException

        _check_package(path, self)
        try:
            workbook = openpyxl.load_workbook(str(path), read_only=True, data_only=True)
        except (KeyError, ValueError, zipfile.BadZipFile, InvalidFileException) as exc:
            raise corrupt(self.label, exc) from None
        try:
            seen: set[str] = set()
            for sheet in workbook.worksheets:
                source = getattr(sheet, "_worksheet_path", sheet.title)
                if source in seen:  # listed twice: read once
                    continue
                seen.add(source)
                lines, size = [], 0
                for line in _sheet_rows(sheet, workbook):
                    lines.append(line)
                    size += len(line) + 1
                    self.check_part(size)
                yield sheet.title, "\n".join(lines)
        finally:
            workbook.close()


def _sheet_rows(sheet: Any, workbook: Any) -> Iterator[str]:
    """The sheet's rows as tab-separated lines, from the cells its XML holds: the declared dimension and row
    numbers never add rows (openpyxl's ``iter_rows`` pads every row to the declared width and yields each row
    number skipped, so ``A1:XFD1048576`` costs minutes); a row is as wide as its last cell (at most 18,278
    columns, ``ZZZ``), and rows without values are left out."""
    for cells in _parsed_rows(sheet, workbook):
        values = {cell["column"]: cell["value"] for cell in cells if cell.get("value") is not None}
        if not values:
            continue
        last = max(values)
        yield "\t".join(_cell(values.get(column)) for column in range(1, last + 1))


def _parsed_rows(sheet: Any, workbook: Any) -> Iterator[list[dict]]:
    """Each row's cells as openpyxl's worksheet parser reads them (row by row, streaming)."""
    from openpyxl.worksheet._reader import WorkSheetParser

    with sheet._get_source() as source:
        parser = WorkSheetParser(source, sheet._shared_strings, data_only=True, epoch=workbook.epoch,
                                 date_formats=workbook._date_formats,
                                 timedelta_formats=workbook._timedelta_formats)
        for _, cells in parser.parse():
            yield cells


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    return str(value).replace("\t", " ").replace("\n", " ")
