"""Each loader keeps the host's context-loader contract (registered, claims its files, the fact reaches the REPL,
a damaged file is one clear error), and what a file gave is cached by content hash under the run home, signed
with this user's key."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from rlm_host import InputError
from rlm_host.sdk.context import Documents
from rlm_host.testing import ContextLoaderContract

from rlm_context_documents import testing as samples
from rlm_context_documents.office import OLE_SIGNATURE, DocxLoader, PptxLoader, XlsxLoader
from rlm_context_documents.pdf import PdfLoader
from rlm_context_documents.web import EpubLoader, HtmlLoader, html_text

DISTRIBUTION = "rlm-context-documents"
FACT = "Thermistor T4 failed at -41.7 C on day 117"


class TestPdf(ContextLoaderContract):
    loader, distribution = "pdf", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_pdf(folder / "report.pdf", 12, FACT, fact_page=7), FACT

    def broken(self, folder: Path) -> Path:
        whole = samples.write_pdf(folder / "whole.pdf", 3).read_bytes()
        (folder / "truncated.pdf").write_bytes(whole[: len(whole) // 2])
        return folder / "truncated.pdf"


class TestDocx(ContextLoaderContract):
    loader, distribution = "docx", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_docx(folder / "report.docx", FACT), FACT

    def broken(self, folder: Path) -> Path:
        path = folder / "locked.docx"
        path.write_bytes(OLE_SIGNATURE + bytes(504))
        return path


class TestPptx(ContextLoaderContract):
    loader, distribution = "pptx", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_pptx(folder / "deck.pptx", FACT), FACT

    def broken(self, folder: Path) -> Path:
        path = folder / "deck.pptx"
        with zipfile.ZipFile(path, "w") as package:
            package.writestr("hello.txt", "a ZIP, but no presentation in it")
        return path


class TestXlsx(ContextLoaderContract):
    loader, distribution = "xlsx", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_xlsx(folder / "book.xlsx", FACT), FACT

    def broken(self, folder: Path) -> Path:
        path = folder / "book.xlsx"
        path.write_bytes(b"PK\x03\x04" + bytes(100))
        return path


class TestHtml(ContextLoaderContract):
    loader, distribution = "html", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_html(folder / "page.html", FACT), FACT

    def broken(self, folder: Path) -> Path:
        path = folder / "page.html"
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(64))  # an image saved under the wrong name
        return path


class TestEpub(ContextLoaderContract):
    loader, distribution = "epub", DISTRIBUTION

    def sample(self, folder: Path) -> tuple[Path, str]:
        return samples.write_epub(folder / "book.epub", FACT), FACT

    def broken(self, folder: Path) -> Path:
        path = folder / "book.epub"
        with zipfile.ZipFile(path, "w") as book:
            book.writestr("mimetype", "application/epub+zip")
        return path


def test_a_pdf_is_one_document_per_page(tmp_path):
    loaded = PdfLoader().load(samples.write_pdf(tmp_path / "report.pdf", 12, FACT, fact_page=7))
    assert isinstance(loaded, Documents) and len(loaded) == 12
    assert loaded.names[0] == "report.pdf#p1" and loaded.names[-1] == "report.pdf#p12"
    assert [name for name, text in zip(loaded.names, loaded) if FACT in text.replace("\n", " ")] == ["report.pdf#p7"]
    assert loaded[2].startswith("Page 3.") and "\r" not in loaded[2]


def test_other_formats_name_their_parts(tmp_path):
    slides = PptxLoader().load(samples.write_pptx(tmp_path / "deck.pptx", FACT, slides=5, fact_slide=3))
    assert slides.names == [f"deck.pptx#s{n}" for n in range(1, 6)]
    assert FACT in slides[2] and "Slide 3" in slides[2] and "Notes: Speaker notes for slide 3" in slides[2]
    sheets = XlsxLoader().load(samples.write_xlsx(tmp_path / "book.xlsx", FACT))
    assert sheets.names == ["book.xlsx#Budget", "book.xlsx#Findings"]
    assert sheets[0].splitlines()[:2] == ["item\tamount", "line 1\t12.5"] and f"Halley\t{FACT}" in sheets[1]
    chapters = EpubLoader().load(samples.write_epub(tmp_path / "book.epub", FACT, chapters=4, fact_chapter=3))
    assert chapters.names == [f"book.epub#c{n}" for n in range(1, 5)] and FACT in chapters[2]
    text = DocxLoader().load(samples.write_docx(tmp_path / "report.docx", FACT))
    assert text.startswith("# Station report\n") and "## Findings\n" + FACT in text and "| T4 | replaced |" in text


def test_html_keeps_the_text_a_reader_sees(tmp_path):
    text = HtmlLoader().load(samples.write_html(tmp_path / "page.html", FACT))
    assert text.splitlines()[0] == "# Station report"
    assert "# Report" in text and f"- {FACT}" in text
    assert "tracking" not in text and "font-family" not in text and "<" not in text
    assert html_text("<pre>a  b\n  c</pre><p>x &amp; y</p>") == "a  b\n  c\nx & y\n"
    latin = tmp_path / "latin.htm"
    latin.write_bytes('<meta charset="iso-8859-1"><p>caf\xe9</p>'.encode("latin-1"))
    assert HtmlLoader().load(latin).strip() == "café"


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def _loader(home: Path, cls=PdfLoader, **settings):
    from rlm_host import HostServices

    from rlm_context_documents.settings import DocumentSettings

    return cls(DocumentSettings(**settings), HostServices(home=home))


def _entry(home: Path) -> tuple[Path, dict, list]:
    """The one cache entry under ``home``: its path, header and parts."""
    (path,) = (home / "cache" / "documents").glob("*.json")
    header, _, payload = path.read_bytes().partition(b"\n")
    return path, json.loads(header), json.loads(payload)


def test_the_second_load_reads_the_cache_keyed_by_content(tmp_path, home, monkeypatch):
    import hashlib

    from rlm_context_documents.loader import DocumentLoader

    path = samples.write_pdf(tmp_path / "report.pdf", 5, FACT, fact_page=2)
    first = _loader(home).load(path)
    entry, header, parts = _entry(home)
    assert entry.name == f"{hashlib.sha256(path.read_bytes()).hexdigest()}.json" and parts[1][0] == "p2"
    assert header["signature"] and header["source"] == "report.pdf"

    def no_extraction(self, path):
        raise AssertionError("extracted again")

    monkeypatch.setattr(DocumentLoader, "_extract", no_extraction)
    again = _loader(home).load(tmp_path / "report.pdf")
    assert list(again) == list(first) and again.names == first.names
    renamed = path.rename(tmp_path / "copy.pdf")
    assert _loader(home).load(renamed).names[0] == "copy.pdf#p1", "the same bytes under another name: named anew"
    samples.write_pdf(tmp_path / "report.pdf", 5, "another fact", fact_page=2)
    with pytest.raises(AssertionError, match="extracted again"):
        _loader(home).load(tmp_path / "report.pdf")  # new content: a miss


def test_a_damaged_or_foreign_cache_entry_is_a_miss(tmp_path, home):
    path = samples.write_pdf(tmp_path / "report.pdf", 2, FACT)
    _loader(home).load(path)
    entry, header, parts = _entry(home)
    entry.write_text('{"extractor": "Pdf')
    assert FACT in _loader(home).load(path)[0].replace("\n", " ")
    entry, header, parts = _entry(home)
    header["extractor"] = "someone else"
    entry.write_bytes(json.dumps(header).encode() + b"\n" + json.dumps([["p1", "wrong"]]).encode())
    assert _loader(home).load(path)[0] != "wrong"
    assert _loader(home, cache=False).load(path) and _entry(home)[1]["extractor"] != "someone else"


def test_the_cache_stays_within_its_budget(tmp_path, home):
    loader = _loader(home, HtmlLoader, cache_max_mb=1)
    for number in range(4):
        page = tmp_path / f"page{number}.html"
        page.write_text(f"<p>{number} " + "x" * 400_000 + "</p>")
        loader.load(page)
    entries = list((home / "cache" / "documents").glob("*.json"))
    assert 1 <= len(entries) < 4 and sum(e.stat().st_size for e in entries) <= 1024 * 1024


@pytest.mark.parametrize("case, expected", [
    ("encrypted", "the PDF is encrypted"),
    ("truncated", "not a readable PDF file"),
    ("not a pdf", "not a readable PDF file"),
    ("scanned", "no text in this PDF file (none on any of its 3 pages)"),
])
def test_unreadable_pdfs_say_why(tmp_path, case, expected):
    path = tmp_path / "in.pdf"
    if case == "encrypted":
        samples.write_encrypted_pdf(path)
    elif case == "truncated":
        whole = samples.write_pdf(tmp_path / "whole.pdf", 20).read_bytes()
        path.write_bytes(whole[: len(whole) * 2 // 3])
    elif case == "not a pdf":
        path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    else:
        samples.write_pdf(path, 3, text=False)
    with pytest.raises(InputError) as raised:
        PdfLoader().load(path)
    assert raised.value.message.startswith(f"{path}: {expected}")
    assert raised.value.hint


def test_a_partly_scanned_pdf_warns_which_pages_have_no_text(tmp_path, caplog):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for number in range(1, 5):
        pdf.add_page()
        if number != 3:
            pdf.multi_cell(0, 5, f"text on page {number}")
    pdf.output(str(tmp_path / "mixed.pdf"))
    loaded = PdfLoader().load(tmp_path / "mixed.pdf")
    assert len(loaded) == 4 and loaded[2] == ""
    assert "1 of 4 pages have no text layer (scanned?): p3" in caplog.text


def test_office_files_that_are_locked_or_not_packages(tmp_path):
    locked = tmp_path / "locked.docx"
    locked.write_bytes(OLE_SIGNATURE + bytes(504))
    with pytest.raises(InputError, match="password-protected"):
        DocxLoader().load(locked)
    text = tmp_path / "notes.docx"
    text.write_text("just text with the wrong suffix")
    with pytest.raises(InputError, match="not a readable DOCX file .*not a ZIP package"):
        DocxLoader().load(text)


def test_a_drm_epub_is_named_as_such(tmp_path):
    path = samples.write_epub(tmp_path / "book.epub", FACT)
    with zipfile.ZipFile(path, "a") as book:
        book.writestr("META-INF/encryption.xml",
                      '<encryption><EncryptedData><CipherData><CipherReference URI="OEBPS/text/ch1.xhtml"/>'
                      "</CipherData></EncryptedData></encryption>")
    with pytest.raises(InputError, match="encrypted \\(DRM\\)"):
        EpubLoader().load(path)


def test_reopening_to_release_memory_keeps_every_page(tmp_path, monkeypatch):
    from rlm_context_documents import pdf

    path = samples.write_pdf(tmp_path / "report.pdf", 9, FACT, fact_page=8)
    whole = list(PdfLoader().extract(path))  # in this process, to watch it reopen
    monkeypatch.setattr(pdf, "REOPEN_GROWTH", -1)  # reopen before every page
    opened = []
    real = pdf.PdfLoader.extract.__globals__["_resident"]
    monkeypatch.setattr(pdf, "_resident", lambda: opened.append(1) or real() or 1)
    again = list(PdfLoader().extract(path))
    assert again == whole and len(whole) == 9 and len(opened) >= 9


def test_a_file_without_a_telling_suffix_goes_by_its_content(tmp_path, rlm_plugin_host):
    from rlm_host.sdk.context import loader_lookup
    from rlm_host.testing import isolated_runner

    host = rlm_plugin_host(DISTRIBUTION)
    runner = isolated_runner(tmp_path / "home", host=host)
    lookup = loader_lookup(host, runner.loaded, runner.home)
    download = samples.write_pdf(tmp_path / "x.pdf", 3, FACT, fact_page=2).rename(tmp_path / "download")
    assert isinstance(lookup(download), PdfLoader)
    assert lookup(download).load(download).names == ["download#p1", "download#p2", "download#p3"]
    for name, write, cls in [("r.docx", samples.write_docx, DocxLoader), ("d.pptx", samples.write_pptx, PptxLoader),
                             ("b.xlsx", samples.write_xlsx, XlsxLoader), ("e.epub", samples.write_epub, EpubLoader),
                             ("p.html", samples.write_html, HtmlLoader)]:
        renamed = write(tmp_path / name, FACT).rename(tmp_path / f"{name[0]}_saved")
        assert isinstance(lookup(renamed), cls), name
    markup = tmp_path / "page.txt"
    markup.write_text("<html><body>markup kept</body></html>")
    assert lookup(markup).load(markup) == markup.read_text(), "a .txt of markup stays text"
