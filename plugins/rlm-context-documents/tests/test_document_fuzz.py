"""A property-based fuzz pass over every loader: small malformed inputs — random bytes, and valid files truncated,
overwritten or spliced — each end in text, a clean ``InputError`` naming the file (a limit error is one), in
bounded time, never a traceback or a hang. The default run is quick; ``-m slow`` runs many more examples."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlm_host import InputError
from rlm_host.sdk.context import Documents

from rlm_context_documents import testing as samples
from rlm_context_documents.office import DocxLoader, PptxLoader, XlsxLoader
from rlm_context_documents.pdf import PdfLoader
from rlm_context_documents.settings import DocumentSettings
from rlm_context_documents.web import EpubLoader, HtmlLoader

FACT = "Thermistor T4 failed at -41.7 C on day 117"
LOADERS = {
    "pdf": (PdfLoader, lambda p: samples.write_pdf(p, 2, FACT)),
    "docx": (DocxLoader, lambda p: samples.write_docx(p, FACT, paragraphs=2)),
    "pptx": (PptxLoader, lambda p: samples.write_pptx(p, FACT, slides=1, fact_slide=1)),
    "xlsx": (XlsxLoader, lambda p: samples.write_xlsx(p, FACT)),
    "html": (HtmlLoader, lambda p: samples.write_html(p, FACT)),
    "epub": (EpubLoader, lambda p: samples.write_epub(p, FACT, chapters=2, fact_chapter=1)),
}
#: Tight limits: a fuzzed file that would need more ends as a limit error, fast.
LIMITS = {"memory_mb": 256, "cpu_seconds": 5, "wall_seconds": 8, "max_chars": 1_000_000}
SECONDS = 10
FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=600, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("valid")
    return {name: write(folder / f"sample.{name}").read_bytes() for name, (_, write) in LOADERS.items()}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def check(name: str, data: bytes, folder: Path) -> None:
    """Loading ``data`` as a ``name`` file gives text or one clean InputError, within ``SECONDS``."""
    path = folder / f"input.{name}"
    path.write_bytes(data)
    start = time.monotonic()
    try:
        loaded = LOADERS[name][0](DocumentSettings(**LIMITS)).load(path)
        assert isinstance(loaded, (str, Documents))
        assert sum(map(len, [loaded] if isinstance(loaded, str) else loaded)) <= LIMITS["max_chars"]
    except InputError as exc:
        assert exc.message.startswith((f"{path}: ", f"cannot read context file {path}")), exc.message
        assert "Traceback" not in exc.message and len(exc.message) < 2000
    assert time.monotonic() - start < SECONDS


def mutated(valid: dict[str, bytes], draw) -> tuple[str, bytes]:
    name = draw(st.sampled_from(sorted(LOADERS)))
    data = bytearray(valid[name])
    kind = draw(st.sampled_from(["truncate", "overwrite", "splice"]))
    position = draw(st.integers(0, len(data) - 1))
    if kind == "truncate":
        return name, bytes(data[:position])
    chunk = draw(st.binary(min_size=1, max_size=64))
    if kind == "overwrite":
        data[position : position + len(chunk)] = chunk
    else:
        data[position:position] = chunk
    return name, bytes(data)


@FAST
@given(name=st.sampled_from(sorted(LOADERS)), data=st.binary(max_size=4096))
def test_random_bytes(folder, name, data):
    check(name, data, folder)


@FAST
@given(st.data())
def test_damaged_files(folder, valid, data):
    name, damaged = mutated(valid, data.draw)
    check(name, damaged, folder)


@pytest.mark.slow
@SLOW
@given(st.data())
def test_damaged_files_at_length(folder, valid, data):
    name, damaged = mutated(valid, data.draw)
    check(name, damaged, folder)
