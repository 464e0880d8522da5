"""Small hostile files, written at test time (nothing binary is kept in the repository): each is a few KB on disk
and declares or expands to far more work than its size."""

from __future__ import annotations

import io
import os
import signal
import struct
import time
import zipfile
from pathlib import Path

import docx

from rlm_context_documents import testing as samples
from rlm_context_documents.web import HtmlLoader

OPF = "http://www.idpf.org/2007/opf"


def nested_xobject_pdf(path: Path, depth: int = 16, fanout: int = 4) -> Path:
    """One page drawing form XObject X0, which draws X1 ``fanout`` times, … down to a form showing text:
    ``fanout ** depth`` text objects from a file of 4 KB."""
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
           b"/Resources << /XObject << /X 6 0 R >> /Font << /F1 5 0 R >> >> >>",
        4: _stream(b"", b"/X Do"),
        5: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    }
    for level in range(depth + 1):
        number = 6 + level
        if level < depth:
            body = b" ".join([b"/X Do"] * fanout)
            resources = b"/Resources << /XObject << /X %d 0 R >> >>" % (number + 1)
        else:
            body = b"BT /F1 12 Tf 10 10 Td (bomb) Tj ET"
            resources = b"/Resources << /Font << /F1 5 0 R >> >>"
        objects[number] = _stream(b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] " + resources, body)
    path.write_bytes(_pdf(objects))
    return path


def _stream(entries: bytes, data: bytes) -> bytes:
    return b"<< " + entries + b" /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def _pdf(objects: dict[int, bytes]) -> bytes:
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for number in sorted(objects):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def epub(path: Path, chapters: dict[str, bytes], spine: list[str], opf_head: str = "", metadata: str = "") -> Path:
    """An EPUB with the given chapter files (name → XHTML bytes) and a spine listing ``spine`` (names) in order;
    ``opf_head`` goes before the package document's root, ``metadata`` into its metadata."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml",
                      '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                      '<rootfile full-path="content.opf" media-type="application/oebps-package+xml"/>'
                      "</rootfiles></container>")
        ids = {name: f"i{number}" for number, name in enumerate(chapters)}
        items = "".join(f'<item id="{ids[n]}" href="{n}" media-type="application/xhtml+xml"/>' for n in chapters)
        refs = "".join(f'<itemref idref="{ids[n]}"/>' for n in spine)
        book.writestr("content.opf",
                      f'<?xml version="1.0"?>{opf_head}<package xmlns="{OPF}" version="3.0" unique-identifier="id">'
                      '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">x</dc:identifier>'
                      f"{metadata}</metadata><manifest>{items}</manifest><spine>{refs}</spine></package>")
        for name, data in chapters.items():
            book.writestr(name, data)
    return path


def chapter(text: str) -> bytes:
    return f'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>{text}</p></body></html>'.encode()


def replace_entries(path: Path, replacements: dict[str, bytes]) -> Path:
    """Rewrite the ZIP package at ``path`` with some entries' contents replaced (or added)."""
    with zipfile.ZipFile(path) as source:
        entries = {info.filename: source.read(info) for info in source.infolist()}
    entries.update(replacements)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in entries.items():
            target.writestr(name, data)
    return path


def xlsx_claiming_every_cell(path: Path) -> Path:
    """A workbook of a few cells whose sheet declares ``A1:XFD1048576``, with one cell at each far corner."""
    samples.write_xlsx(path, "the fact")
    sheet = ('<?xml version="1.0" encoding="UTF-8"?><worksheet '
             'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
             '<dimension ref="A1:XFD1048576"/><sheetData>'
             '<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row>'
             '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>'
             "</sheetData></worksheet>")
    return replace_entries(path, {"xl/worksheets/sheet1.xml": sheet.encode()})


def xlsx_listing_one_sheet(path: Path, times: int) -> Path:
    """A workbook whose workbook part lists its first sheet ``times`` times."""
    samples.write_xlsx(path, "the fact")
    with zipfile.ZipFile(path) as book:
        workbook = book.read("xl/workbook.xml").decode()
    start, end = workbook.index("<sheets>") + len("<sheets>"), workbook.index("</sheets>")
    first = workbook[start:end].split("/>")[0] + "/>"
    copies = "".join(first.replace('name="Budget"', f'name="Budget{n}"').replace('sheetId="1"', f'sheetId="{n + 10}"')
                     for n in range(times))
    return replace_entries(path, {"xl/workbook.xml": (workbook[:start] + copies + workbook[end:]).encode()})


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def docx_with_body(path: Path, body: str, prolog: str = "") -> Path:
    """A DOCX whose ``word/document.xml`` body is ``body`` (WordprocessingML)."""
    document = docx.Document()
    document.save(str(path))
    xml = (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>{prolog}'
           f'<w:document {W}><w:body>{body}</w:body></w:document>')
    return replace_entries(path, {"word/document.xml": xml.encode()})


def docx_spanning(path: Path, rows: int = 50, span: int = 50_000_000) -> Path:
    """A table whose every cell declares a horizontal span of ``span`` grid columns."""
    cell = f'<w:tc><w:tcPr><w:gridSpan w:val="{span}"/></w:tcPr><w:p><w:r><w:t>cell</w:t></w:r></w:p></w:tc>'
    table = "<w:tbl><w:tblGrid><w:gridCol/></w:tblGrid>" + f"<w:tr>{cell * 3}</w:tr>" * rows + "</w:tbl>"
    return docx_with_body(path, f"<w:p><w:r><w:t>before the table</w:t></w:r></w:p>{table}<w:p/>")


def zip_bomb_docx(path: Path, megabytes: int, text_node: bool = False) -> Path:
    """A DOCX whose document part is ``megabytes`` MB of spaces around one paragraph, or (``text_node``) one
    text node of that size: a few hundred KB compressed, written in pieces (the test process never holds it)."""
    docx_with_body(path, "")
    with zipfile.ZipFile(path) as source:
        entries = {info.filename: source.read(info) for info in source.infolist()}
    opening, closing = (b"<w:p><w:r><w:t>", b"</w:t></w:r></w:p>") if text_node else (b"", b"")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in entries.items():
            if name != "word/document.xml":
                target.writestr(name, data)
        with target.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(f'<?xml version="1.0"?><w:document {W}><w:body><w:p><w:r><w:t>bomb</w:t></w:r></w:p>'.encode())
            part.write(opening)
            block = (b"A" if text_node else b" ") * (1024 * 1024)
            for _ in range(megabytes):
                part.write(block)
            part.write(closing + b"</w:body></w:document>")
    return path


def epub_bomb(path: Path, megabytes: int) -> Path:
    """An EPUB of one chapter holding ``megabytes`` MB of text (≈1/1000 of that on disk), written in pieces."""
    epub(path, {"c.xhtml": chapter("start")}, ["c.xhtml"])
    with zipfile.ZipFile(path) as source:
        entries = {info.filename: source.read(info) for info in source.infolist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as target:
        for name, data in entries.items():
            if name != "c.xhtml":
                target.writestr(name, data, compress_type=zipfile.ZIP_STORED if name == "mimetype" else None)
        with target.open("c.xhtml", "w", force_zip64=True) as part:
            part.write(b'<html xmlns="http://www.w3.org/1999/xhtml"><body><p>')
            block = b"all work and no play " * 52429
            for _ in range(megabytes):
                part.write(block[: 1024 * 1024])
            part.write(b"</p></body></html>")
    return path


def declare_size(data: bytes, name: str, size: int) -> bytes:
    """The ZIP ``data`` with entry ``name``'s uncompressed size rewritten to ``size`` in its local header and
    its central directory record (the bytes themselves unchanged): a package that lies about its sizes."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        info = package.getinfo(name)
    struct.pack_into("<I", out, info.header_offset + 22, size)
    position = out.index(b"PK\x05\x06")
    count, _, directory = struct.unpack_from("<HII", out, position + 10)
    for _ in range(count):
        length, extra, comment = struct.unpack_from("<HHH", out, directory + 28)
        if out[directory + 46 : directory + 46 + length].decode() == name:
            struct.pack_into("<I", out, directory + 24, size)
        directory += 46 + length + extra + comment
    return bytes(out)


# -- readers that break each limit: importable by name, as a bounded child may import its target ------------------


class Sleeper(HtmlLoader):
    def extract(self, path):
        time.sleep(60)
        yield "", "never"


class Spinner(HtmlLoader):
    def extract(self, path):
        while True:
            pass
        yield "", "never"


class Glutton(HtmlLoader):
    def extract(self, path):
        hoard = [bytearray(1 << 20) for _ in range(4096)]
        yield "", str(len(hoard))


class Crasher(HtmlLoader):
    def extract(self, path):
        os.kill(os.getpid(), signal.SIGSEGV)
        yield "", "never"


class Thrower(HtmlLoader):
    def extract(self, path):
        raise RecursionError("maximum recursion depth exceeded")
        yield "", "never"


def large(size: int) -> str:
    """A result larger than a small output cap."""
    return "x" * size
