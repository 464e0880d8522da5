"""``rlm bench report … --format html``: a self-contained page with SVG charts, checked as text and in a browser."""

from __future__ import annotations

import json
import re
import struct
import zlib
from collections import Counter, defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bench_data import SMOKE_RULES, DATA, repl, write_script
from bench_data.fixtures import cli, isolated_env  # noqa: F401 (fixtures)
from rlm_bench.html_report import render_html
from rlm_bench.store import BenchStore
from support.browser import browser, chromium  # noqa: F401 (the chromium fixture; tests/support)

EVIL = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>Kasrin"


@pytest.fixture
def benchmarks(cli, isolated_env):
    """A native smoke benchmark and a direct-llm one whose model answers with markup."""
    work = Path(isolated_env["WORK"])
    write_script(work / "good.json", SMOKE_RULES)
    write_script(work / "evil.json", [{"match": "Velmora", "text": EVIL}, {"match": "Isjor", "text": "Delmar"}])
    ids = []
    for args in (("--preset", "pure_rlm_smoke", "--model", "scripted:good.json", "--sandbox", "process"),
                 ("--pack", str(DATA / "evals.yaml"), "--mode", "direct-llm", "--model", "scripted:evil.json",
                  "--limit", "2")):
        code, out, err = cli("bench", "run", *args, "-q", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["benchmark_id"])
    store = BenchStore(work / ".rlm")
    return ids, [store.load(i) for i in ids], store


class Page(HTMLParser):
    """Counts what the tests look for: chart points per series, tables and their rows, URL-bearing attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.svg: str | None = None
        self.series: str | None = None
        self.points: dict[str, Counter] = defaultdict(Counter)
        self.tables: Counter = Counter()
        self.case_rows = 0
        self.scripts = 0
        self.urls: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.svg = a.get("id")
        elif tag == "g" and "data-series" in a:
            self.series = a["data-series"]
        elif tag == "circle" and self.svg:
            self.points[self.svg][self.series] += 1
        elif tag == "table":
            self.tables[a.get("class")] += 1
        elif tag == "tr" and a.get("class") == "case":
            self.case_rows += 1
        elif tag == "script":
            self.scripts += 1
        self.urls += [v for k, v in attrs if k in ("src", "href") and v]

    def handle_endtag(self, tag):
        if tag == "svg":
            self.svg = None
        elif tag == "g":
            self.series = None

    def handle_data(self, data):
        self.text.append(data)


def parse(markup: str) -> Page:
    page = Page()
    page.feed(markup)
    return page


def expected_points(summaries) -> dict[str, int]:
    """Distinct context lengths of scored cases per (mode, model) series."""
    lengths: dict[str, set] = defaultdict(set)
    for s in summaries:
        lengths[f"{s.mode} · {s.model}"] |= {c.context_tokens for c in s.cases if c.score is not None}
    return {label: len(v) for label, v in lengths.items()}


def check_page(markup: str, summaries) -> Page:
    page = parse(markup)
    assert not re.search(r"https?://", markup), "the report must not reference any URL"
    assert page.scripts == 0 and page.urls == []
    assert dict(page.points["chart-accuracy"]) == expected_points(summaries)
    assert sum(page.points["chart-cost"].values()) == sum(len({c.context_tokens for c in s.cases}) for s in summaries)
    assert page.tables["summary"] == len(summaries) and page.tables["cases"] == len(summaries)
    assert page.tables["by-pack"] == len(summaries) and page.case_rows == sum(len(s.cases) for s in summaries)
    assert EVIL in "".join(page.text)  # shown as text …
    return page


def test_html_report_is_self_contained_and_escapes_model_output(cli, benchmarks):
    ids, summaries, store = benchmarks
    code, markup, err = cli("bench", "report", ids[0], ids[1], "--format", "html")  # not a terminal: stdout
    assert code == 0, err
    assert markup.startswith("<!DOCTYPE html>") and not list(store.root.glob("*.html"))
    check_page(markup, summaries)
    assert "<script>" not in markup and "&lt;script&gt;document.title=" in markup  # … never as markup
    assert "Content-Security-Policy" in markup and "default-src 'none'" in markup
    assert "Tokens against context length" in markup  # scripted models are free: cost 0

    code, _, err = cli("bench", "report", "previous", "--format", "html", "--output", "one.html")
    assert code == 0 and Path("one.html").is_file()
    single = parse(Path("one.html").read_text())
    assert list(single.points["chart-accuracy"]) == ["native · scripted:good.json"]
    code, _, err = cli("bench", "report", ids[0], ids[1], "--format", "csv")
    assert code == 2 and "csv reports cover one benchmark" in err


def test_cost_chart_when_every_case_has_a_price(benchmarks):
    _, summaries, _ = benchmarks
    priced = summaries[0].model_copy(deep=True)
    for i, case in enumerate(priced.cases):
        case.cost = 0.001 * (i + 1)
    markup = render_html([priced])
    assert "Cost against context length" in markup and "$0.00" in markup
    with pytest.raises(ValueError):
        render_html([])


# --- in a real browser ----------------------------------------------------------------------------------------


def png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw unfiltered pixels) of an 8-bit, non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        header = chunk if kind == b"IHDR" else header
        idat += chunk if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and interlace == 0 and colour in (0, 2, 4, 6)
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[colour]
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray(height * stride)
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up = previous[x]
            corner = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        out[y * stride:(y + 1) * stride] = line
        previous = line
    return width, height, bpp, bytes(out)


@pytest.mark.slow
def test_html_report_renders_in_a_headless_browser(cli, benchmarks, chromium, tmp_path):
    ids, summaries, store = benchmarks
    report = tmp_path / "report.html"
    code, _, err = cli("bench", "report", *ids, "--format", "html", "--output", str(report))
    assert code == 0, err

    dumped = browser(chromium, tmp_path / "profile-dom", "--dump-dom", report.as_uri())
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    page = check_page(dom, summaries)  # the charts and tables as the browser built them
    assert "<script>" not in dom and "pwned" not in re.findall(r"<title>(.*?)</title>", dom)[0]
    assert len(page.points) == 2

    shot = tmp_path / "shot.png"
    taken = browser(chromium, tmp_path / "profile-shot", f"--screenshot={shot}", report.as_uri())
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    width, height, bpp, pixels = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 1600)
    grey = [sum(pixels[i:i + min(bpp, 3)]) / min(bpp, 3) for i in range(0, len(pixels), bpp * 7)]
    mean = sum(grey) / len(grey)
    variance = sum((g - mean) ** 2 for g in grey) / len(grey)
    assert variance > 100, f"the screenshot looks blank (variance {variance:.1f})"
    distinct = {tuple(pixels[i:i + 3]) for i in range(0, len(pixels), bpp * 11)}
    assert len(distinct) > 20  # text, chart colours and table borders, not a flat page
    assert not re.search(r"https?://", report.read_text())
