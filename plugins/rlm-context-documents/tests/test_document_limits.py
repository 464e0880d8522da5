"""Hostile files end in text or in one clean ``InputError`` naming the file and the limit, in bounded time, and the
host process never grows with them: extraction runs in a child process with memory, CPU and time limits, output
caps bound what comes back, declared sizes (XLSX dimensions, EPUB spines, ZIP entry sizes, table spans) never
drive the work, and a cache entry this user did not sign is never read."""

from __future__ import annotations

import json
import re
import resource
import threading
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from rlm_host import HostServices, InputError
from rlm_host.sdk.context import BoundedLimits, Documents, LimitExceeded, bounded_start_method, run_bounded

import documents_hostile as hostile
from rlm_context_documents import testing as samples
from rlm_context_documents.office import DocxLoader, PptxLoader, XlsxLoader
from rlm_context_documents.pdf import PdfLoader
from rlm_context_documents.settings import DocumentSettings
from rlm_context_documents.web import EpubLoader, HtmlLoader

FACT = "Thermistor T4 failed at -41.7 C on day 117"


@contextmanager
def bounded(seconds: float = 10, parent_mb: int = 150):
    """The block takes under ``seconds`` and the test process's peak memory grows by under ``parent_mb``."""
    start, peak = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    yield
    assert time.monotonic() - start < seconds, f"took {time.monotonic() - start:.1f} s"
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024
    assert grown < parent_mb, f"the host process grew by {grown:.0f} MB"


@pytest.fixture(params=["fork", "server"])
def mode(request):
    """``fork``: this process is single-threaded, each child is forked from it; ``server``: another thread is
    alive (as in a server), so children come from the fork server."""
    if request.param == "fork":
        yield request.param
        return
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    assert bounded_start_method() == "forkserver"
    yield request.param
    stop.set()
    other.join()


def load(cls, path: Path, **settings):
    return cls(DocumentSettings(**settings)).load(path)


def refused(cls, path: Path, **settings) -> str:
    with pytest.raises(InputError) as raised:
        load(cls, path, **settings)
    message = raised.value.message
    assert message.startswith(f"{path}: ") and "Traceback" not in message
    return message


# -- the attacks of the issue ------------------------------------------------------------------------------------


def test_nested_form_xobjects_stop_at_the_memory_limit(tmp_path, mode):
    path = hostile.nested_xobject_pdf(tmp_path / "nested.pdf")
    assert path.stat().st_size < 4096
    with bounded(seconds=30):
        message = refused(PdfLoader, path, memory_mb=256, cpu_seconds=20, wall_seconds=25)
    assert "reading it stopped at the memory limit (memory_mb = 256): it needed more memory (it grew by" in message


def test_an_epub_spine_listing_one_chapter_3000_times_reads_it_once(tmp_path):
    path = hostile.epub(tmp_path / "spine.epub", {"c.xhtml": hostile.chapter("word " * 20_000)}, ["c.xhtml"] * 3000)
    assert path.stat().st_size < 8192
    with bounded():
        chapters = load(EpubLoader, path)
    assert chapters.names == ["spine.epub#c1"] and len(chapters[0]) < 200_000


def test_an_epub_that_unpacks_past_the_cap_is_refused_before_it_is_read(tmp_path):
    path = hostile.epub_bomb(tmp_path / "bomb.epub", 64)
    assert path.stat().st_size < 300_000
    with bounded(seconds=5):
        message = refused(EpubLoader, path, max_unzipped_mb=32)
    assert "unpacks to 64 MB, more than max_unzipped_mb = 32" in message


def test_an_epub_whose_text_runs_past_the_caps_stops_early(tmp_path):
    path = hostile.epub_bomb(tmp_path / "bomb.epub", 24)
    with bounded():
        message = refused(EpubLoader, path, max_part_chars=1_000_000)
    assert "more than max_part_chars = 1,000,000 characters" in message


@pytest.mark.slow
def test_the_issues_epub_bomb_with_the_default_limits(tmp_path):
    path = hostile.epub_bomb(tmp_path / "bomb.epub", 300)
    with bounded(seconds=30):
        message = refused(EpubLoader, path)
    assert "max_part_chars" in message or "max_chars" in message


def test_an_xlsx_declaring_a1_to_xfd1048576_reads_only_its_cells(tmp_path):
    path = hostile.xlsx_claiming_every_cell(tmp_path / "wide.xlsx")
    assert path.stat().st_size < 8192
    with bounded(seconds=5):
        sheets = load(XlsxLoader, path)
    budget = sheets[sheets.names.index("wide.xlsx#Budget")]
    assert budget.splitlines() == ["first", "\t" * 16383 + "last"]


def test_a_workbook_listing_one_sheet_many_times_reads_it_once(tmp_path):
    path = hostile.xlsx_listing_one_sheet(tmp_path / "many.xlsx", 2000)
    with bounded():
        sheets = load(XlsxLoader, path)
    assert len(sheets) <= 2 and "line 20\t250" in sheets[0]


def test_a_docx_with_a_huge_text_node_is_a_clean_error(tmp_path):
    path = hostile.docx_with_body(tmp_path / "node.docx", f"<w:p><w:r><w:t>{'A' * 11_000_000}</w:t></w:r></w:p>")
    with bounded():
        message = refused(DocxLoader, path)
    assert "not a readable DOCX file" in message and "XMLSyntaxError" in message


@pytest.mark.slow
def test_the_issues_300_mb_text_node_with_the_default_limits(tmp_path):
    path = hostile.zip_bomb_docx(tmp_path / "node.docx", 300, text_node=True)
    with bounded(seconds=30):
        message = refused(DocxLoader, path)
    assert "not a readable DOCX file" in message and "XMLSyntaxError" in message or "memory_mb" in message, message


def test_declared_table_spans_are_not_repeated(tmp_path):
    path = hostile.docx_spanning(tmp_path / "span.docx")
    with bounded(seconds=5):
        text = load(DocxLoader, path)
    assert text.startswith("before the table\n| cell | cell | cell |") and len(text) < 2000


def test_a_zip_bomb_is_refused_by_its_declared_size(tmp_path):
    path = hostile.zip_bomb_docx(tmp_path / "bomb.docx", 64)
    assert path.stat().st_size < 300_000
    with bounded(seconds=5):
        message = refused(DocxLoader, path, max_unzipped_mb=16)
    assert re.search(r"the DOCX package unpacks to 6\d MB, more than max_unzipped_mb = 16$", message), message


@pytest.mark.parametrize("declared", [100, 10**9])
def test_a_package_lying_about_its_sizes_is_a_clean_error(tmp_path, declared):
    """Declaring less than the entry holds stops reading at the declared size (the CRC then fails); declaring
    more than the cap is refused before reading."""
    path = samples.write_docx(tmp_path / "liar.docx", FACT)
    path.write_bytes(hostile.declare_size(path.read_bytes(), "word/document.xml", declared))
    with bounded(seconds=5):
        message = refused(DocxLoader, path, max_unzipped_mb=64)
    assert "not a readable DOCX file" in message or "max_unzipped_mb = 64" in message


def test_xml_entities_neither_expand_nor_read_local_files(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("the-secret-token")
    external = f'<!DOCTYPE w:document [<!ENTITY xxe SYSTEM "file://{secret}">]>'
    path = hostile.docx_with_body(tmp_path / "xxe.docx", "<w:p><w:r><w:t>see &xxe; here</w:t></w:r></w:p>", external)
    try:
        assert "the-secret-token" not in load(DocxLoader, path)
    except InputError as exc:
        assert "the-secret-token" not in exc.message
    laughs = ('<!DOCTYPE package [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">' for n in range(9)) + "]>")
    book = hostile.epub(tmp_path / "laughs.epub", {"c.xhtml": hostile.chapter("text")}, ["c.xhtml"], laughs,
                        "<dc:title>&j;</dc:title>")
    with bounded(seconds=5):
        try:
            load(EpubLoader, book)
        except InputError as exc:
            assert "Traceback" not in exc.message


def test_a_deck_listing_one_slide_twice_reads_it_once(tmp_path):
    path = samples.write_pptx(tmp_path / "deck.pptx", FACT, slides=2, fact_slide=1)
    with zipfile.ZipFile(path) as deck:
        presentation = deck.read("ppt/presentation.xml").decode()
    start = presentation.index("<p:sldId ")
    first = presentation[start : presentation.index("/>", start) + 2]
    copies = "".join(first.replace('id="256"', f'id="{300 + n}"') for n in range(500))
    hostile.replace_entries(path, {"ppt/presentation.xml": presentation.replace(first, first + copies).encode()})
    slides = load(PptxLoader, path)
    assert len(slides) == 2 and FACT in slides[0]


# -- the limits themselves -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls, settings, expected", [
    (hostile.Sleeper, {"wall_seconds": 1},
     "reading it stopped at the time limit (wall_seconds = 1): it did not finish"),
    (hostile.Spinner, {"cpu_seconds": 1}, "reading it stopped at the CPU-time limit (cpu_seconds = 1)"),
    (hostile.Glutton, {"memory_mb": 64}, "reading it stopped at the memory limit (memory_mb = 64)"),
    (hostile.Crasher, {}, "the HTML reader crashed (SIGSEGV)"),
    (hostile.Thrower, {}, "not a readable HTML file (damaged, truncated, or another format): its structure is nested"),
])
def test_each_limit_is_one_error_naming_it(tmp_path, mode, cls, settings, expected):
    path = samples.write_html(tmp_path / "page.html", FACT)
    with bounded(seconds=8):
        message = refused(cls, path, **settings)
    assert expected in message, message


@pytest.mark.parametrize("settings, expected", [
    ({"max_parts": 5}, "the PDF has 12 pages, more than max_parts = 5"),
    ({"max_chars": 2000}, "the text runs past max_chars = 2,000 characters"),
    ({"max_part_chars": 100}, "a page holds more than max_part_chars = 100 characters"),
])
def test_output_caps(tmp_path, settings, expected):
    path = samples.write_pdf(tmp_path / "report.pdf", 12, FACT)
    with pytest.raises(InputError) as raised:
        load(PdfLoader, path, **settings)
    assert expected in raised.value.message and list(settings)[0] in raised.value.hint


def test_the_parent_reads_no_more_than_the_output_cap(mode):
    limits = BoundedLimits(output_bytes=10_000)
    with pytest.raises(LimitExceeded) as raised:
        run_bounded(hostile.large, 1_000_000, limits=limits)
    assert raised.value.limit == "output"
    assert run_bounded(hostile.large, 10, limits=limits) == "x" * 10


def test_a_threaded_host_uses_a_forkserver(tmp_path):
    """A fork of a process with other threads may inherit a held lock: there the child comes from a forkserver."""
    start_method = bounded_start_method
    path = samples.write_pdf(tmp_path / "report.pdf", 3, FACT, fact_page=2)
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    try:
        assert start_method() == "forkserver"
        pages = load(PdfLoader, path)
    finally:
        stop.set()
        busy.join()
    assert FACT in pages[1].replace("\n", " ")


# -- the cache -----------------------------------------------------------------------------------------------------


def test_a_cache_entry_shipped_in_a_project_is_ignored_and_replaced(tmp_path):
    import hashlib

    path = samples.write_pdf(tmp_path / "report.pdf", 3, FACT, fact_page=2)
    folder = tmp_path / ".rlm" / "cache" / "documents"
    folder.mkdir(parents=True)
    entry = folder / f"{hashlib.sha256(path.read_bytes()).hexdigest()}.json"
    loader = PdfLoader(DocumentSettings(), HostServices(home=tmp_path / ".rlm"))
    forged = {"extractor": loader.extractor(), "source": "report.pdf", "signature": "0" * 64}
    entry.write_bytes(json.dumps(forged).encode() + b"\n" + json.dumps([["p1", "Wire the money"]]).encode())
    pages = loader.load(path)
    assert "Wire the money" not in "".join(pages) and FACT in pages[1].replace("\n", " ")
    header = json.loads(entry.read_bytes().partition(b"\n")[0])
    assert header["signature"] != "0" * 64, "rebuilt and signed by this user"


def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    keep = elsewhere / f"{'a' * 64}.json"
    keep.write_text("a file of the user's")
    (tmp_path / ".rlm" / "cache").mkdir(parents=True)
    (tmp_path / ".rlm" / "cache" / "documents").symlink_to(elsewhere)
    loader = HtmlLoader(DocumentSettings(cache_max_mb=1), HostServices(home=tmp_path / ".rlm"))
    page = tmp_path / "page.html"
    page.write_text("<p>" + "y" * 2_000_000 + "</p>")
    assert loader.load(page).startswith("yyy")
    assert [p.name for p in elsewhere.iterdir()] == [keep.name] and keep.read_text() == "a file of the user's"


def test_a_threaded_load_and_the_cache_agree(tmp_path):
    """Loads from several threads at once (a server's calls) each get the whole text."""
    paths = [samples.write_pdf(tmp_path / f"r{n}.pdf", 4, f"{FACT} #{n}", fact_page=3) for n in range(4)]
    loader = PdfLoader(DocumentSettings(), HostServices(home=tmp_path / ".rlm"))
    results: dict[int, Documents] = {}

    def work(n: int) -> None:
        results[n] = loader.load(paths[n])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(f"{FACT} #{n}" in results[n][2].replace("\n", " ") for n in range(4))
