"""How fast does a 500-page PDF become a run's context, how much memory does that take, and how faithful is the
text?

Generates a text PDF of ``--pages`` pages (fpdf2, with known text per page), then, each in a fresh process:
loads it through the ``pdf`` context loader with an empty cache (first run) and again from the cache, printing
wall time and peak resident memory beside the targets (≤ 5 s first, ≤ 0.2 s cached; memory a small multiple of
the extracted text, whatever the file's size). Then compares PDF libraries on the same file: PDFium (pypdfium2,
what the loader uses) and pypdf, installed into the benchmark's own environment (``isolated_env.py``), on time and
on text fidelity (share of each page's words recovered, in order).

    .venv/bin/python benchmarks/documents.py [--pages 500] [--repeat 3] [--no-candidates]
"""

from __future__ import annotations

import argparse
import difflib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from isolated_env import benchmark_python  # noqa: E402

LOAD = """
import json, re, sys, time
from pathlib import Path
def hwm_kb():  # this process's own peak (ru_maxrss would carry the parent's across exec)
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1))
from rlm_host import HostServices
from rlm_context_documents.pdf import PdfLoader
from rlm_context_documents.settings import DocumentSettings
base = hwm_kb()
start = time.perf_counter()
pages = PdfLoader(DocumentSettings(), HostServices(home=Path(sys.argv[2]))).load(Path(sys.argv[1]))
wall = time.perf_counter() - start
peak = hwm_kb()
print(json.dumps({"wall": wall, "peak_kb": peak, "base_kb": base, "chars": sum(map(len, pages)), "pages": len(pages)}))
"""

EXTRACT = {
    "pypdfium2": """
import json, sys, time
import pypdfium2 as pdfium
start = time.perf_counter()
doc = pdfium.PdfDocument(sys.argv[1]); pages = []
for i in range(len(doc)):
    page = doc[i]; tp = page.get_textpage(); pages.append(tp.get_text_bounded()); tp.close(); page.close()
print(json.dumps({"wall": time.perf_counter() - start, "pages": pages}))
""",
    "pypdf": """
import json, sys, time
import pypdf
start = time.perf_counter()
pages = [page.extract_text() for page in pypdf.PdfReader(sys.argv[1]).pages]
print(json.dumps({"wall": time.perf_counter() - start, "pages": pages}))
""",
}


def page_text(number: int) -> str:
    """The known text of page ``number``: varied words, so fidelity is measured on more than repeated filler."""
    words = [f"w{(number * 7919 + i * 104729) % 100000}" for i in range(120)]
    return f"Page {number}. Reading {number * 3.25:.2f} kPa at station S{number % 17}. " + " ".join(words)


def write_pdf(path: Path, pages: int) -> list[str]:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    texts = []
    for number in range(1, pages + 1):
        pdf.add_page()
        texts.append(page_text(number))
        pdf.multi_cell(0, 5, texts[-1])
    pdf.output(str(path))
    return texts


def write_heavy_pdf(path: Path, megabytes: int) -> None:
    """A PDF that is mostly image data (incompressible noise), with a line of text per page: loading its text
    must not cost memory in proportion to the file."""
    import os

    from fpdf import FPDF
    from PIL import Image

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    side = 1000  # 1000 x 1000 RGB noise: ~3 MB per page
    for number in range(1, max(1, megabytes // 3) + 1):
        pdf.add_page()
        pdf.multi_cell(0, 5, page_text(number))
        pdf.image(Image.frombytes("RGB", (side, side), os.urandom(side * side * 3)), x=10, y=40, w=150)
    pdf.output(str(path))


def fidelity(expected: list[str], got: list[str]) -> float:
    """Mean over pages of the in-order share of the page's words recovered (1.0: every word, in order)."""
    if len(got) != len(expected):
        return 0.0
    scores = []
    for want, have in zip(expected, got):
        a, b = want.split(), have.split()
        matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
        scores.append(sum(block.size for block in matcher.get_matching_blocks()) / len(a))
    return statistics.mean(scores)


def run_json(python: str, code: str, *args: str) -> dict:
    done = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--heavy-mb", type=int, default=120, help="size of the image-heavy PDF (0: skip it)")
    parser.add_argument("--no-candidates", action="store_true", help="skip the PDF library comparison")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pdf = Path(folder) / "report.pdf"
        texts = write_pdf(pdf, options.pages)
        print(f"{options.pages}-page text PDF: {pdf.stat().st_size / 1e6:.2f} MB, "
              f"{sum(map(len, texts)) / 1e6:.2f} M chars of text")
        first, cached = [], []
        for index in range(options.repeat):
            home = Path(folder) / f"home{index}"
            first.append(run_json(sys.executable, LOAD, str(pdf), str(home)))
            cached.append(run_json(sys.executable, LOAD, str(pdf), str(home)))
        _row("first load (extract + cache)", first, 5.0)
        _row("cached load", cached, 0.2)
        if options.heavy_mb:
            heavy = Path(folder) / "scans.pdf"
            write_heavy_pdf(heavy, options.heavy_mb)
            print(f"\nimage-heavy PDF: {heavy.stat().st_size / 1e6:.0f} MB file, one line of text per page")
            _row("first load", [run_json(sys.executable, LOAD, str(heavy), str(Path(folder) / "heavy"))], 5.0)
        if options.no_candidates:
            return
        print("\nPDF libraries on the same file (extraction only, one process each):")
        pythons = {"pypdfium2": sys.executable, "pypdf": str(benchmark_python("pdf-candidates", ["pypdf>=5"]))}
        for name, python in pythons.items():
            runs = [run_json(python, EXTRACT[name], str(pdf)) for _ in range(options.repeat)]
            wall = statistics.median(r["wall"] for r in runs)
            print(f"  {name:<10} {wall:6.2f} s   fidelity {fidelity(texts, runs[0]['pages']):.4f}")


def _row(label: str, runs: list[dict], target: float) -> None:
    wall = statistics.median(r["wall"] for r in runs)
    peak = max(r["peak_kb"] for r in runs) / 1024
    grown = max(r["peak_kb"] - r["base_kb"] for r in runs) / 1024
    chars = runs[0]["chars"] / 1e6
    verdict = "ok" if wall <= target else "OVER"
    print(f"  {label:<30} {wall:6.3f} s (target ≤ {target} s: {verdict})   peak RSS {peak:5.0f} MB, "
          f"+{grown:.0f} MB while loading {runs[0]['pages']} pages / {chars:.2f} M chars")


if __name__ == "__main__":
    main()
