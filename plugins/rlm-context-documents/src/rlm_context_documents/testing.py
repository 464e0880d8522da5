"""Sample files for tests and benchmarks, written with the formats' real writer libraries (no binary files are
kept in the repository). PDF needs ``fpdf2`` (this plugin's ``test`` extra); the Office formats use the same
libraries the loaders read with; EPUB and HTML are written as the plain ZIP and markup they are.

Each writer puts ``fact`` on a named part (page, slide, sheet, chapter) and filler text elsewhere.
"""

from __future__ import annotations

import zipfile
from html import escape
from pathlib import Path

FILLER = ("The committee reviewed the quarterly figures for the northern stations and found them in line with "
          "the previous season. Maintenance visits were carried out as planned and no further action is "
          "needed.")


def write_pdf(path: Path, pages: int, fact: str = "", fact_page: int = 1, *, text: bool = True) -> Path:
    """A text PDF of ``pages`` pages, ``fact`` on page ``fact_page``; ``text=False``: pages of drawn shapes only,
    as a scan without a text layer looks to a text extractor."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for number in range(1, pages + 1):
        pdf.add_page()
        if not text:
            pdf.rect(20, 20, 120, 160, style="F")
            continue
        body = f"Page {number}. {FILLER} " * 3
        if number == fact_page and fact:
            body += fact
        pdf.multi_cell(0, 5, body)
    pdf.output(str(path))
    return path


def write_encrypted_pdf(path: Path, fact: str = "secret") -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="user")
    pdf.add_page()
    pdf.set_font("helvetica", size=10)
    pdf.multi_cell(0, 5, fact)
    pdf.output(str(path))
    return path


def write_docx(path: Path, fact: str, paragraphs: int = 20) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Station report", level=1)
    for number in range(paragraphs):
        document.add_paragraph(f"{number + 1}. {FILLER}")
    document.add_heading("Findings", level=2)
    document.add_paragraph(fact)
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "sensor", "status"
    table.cell(1, 0).text, table.cell(1, 1).text = "T4", "replaced"
    document.save(str(path))
    return path


def write_pptx(path: Path, fact: str, slides: int = 5, fact_slide: int = 3) -> Path:
    import pptx

    deck = pptx.Presentation()
    for number in range(1, slides + 1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number}"
        slide.placeholders[1].text = fact if number == fact_slide else FILLER
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for slide {number}"
    deck.save(str(path))
    return path


def write_xlsx(path: Path, fact: str, sheet: str = "Findings") -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    first = book.active
    first.title = "Budget"
    first.append(["item", "amount"])
    for number in range(1, 21):
        first.append([f"line {number}", number * 12.5])
    second = book.create_sheet(sheet)
    second.append(["station", "note"])
    second.append(["Halley", fact])
    book.save(str(path))
    return path


def write_html(path: Path, fact: str) -> Path:
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Station report</title>"
        "<style>body { font-family: serif }</style><script>var tracking = 'do not read me';</script></head>"
        f"<body><nav><a href='/'>Home</a></nav><h1>Report</h1><p>{escape(FILLER)}</p>"
        f"<ul><li>first item</li><li>{escape(fact)}</li></ul></body></html>",
        encoding="utf-8",
    )
    return path


def write_epub(path: Path, fact: str, chapters: int = 4, fact_chapter: int = 3) -> Path:
    """A minimal valid EPUB 3: ``mimetype`` first and stored, a container, a package document, XHTML chapters."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as book:
        book.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        book.writestr("META-INF/container.xml",
                      '<?xml version="1.0"?><container version="1.0" '
                      'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                      '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                      "</rootfiles></container>")
        items, refs = [], []
        for number in range(1, chapters + 1):
            body = fact if number == fact_chapter else FILLER
            book.writestr(f"OEBPS/text/ch{number}.xhtml",
                          '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                          f"<head><title>Chapter {number}</title></head><body><h1>Chapter {number}</h1>"
                          f"<p>{escape(body)}</p></body></html>")
            items.append(f'<item id="ch{number}" href="text/ch{number}.xhtml" media-type="application/xhtml+xml"/>')
            refs.append(f'<itemref idref="ch{number}"/>')
        book.writestr("OEBPS/content.opf",
                      '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
                      'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
                      '<dc:identifier id="id">rlm-sample</dc:identifier><dc:title>Sample</dc:title>'
                      f"<dc:language>en</dc:language></metadata><manifest>{''.join(items)}</manifest>"
                      f"<spine>{''.join(refs)}</spine></package>")
    return path
