"""What reading documents in a bounded child process costs: the 500-page PDF first and cached, small files of
every format, and the child process itself (fork, forkserver).

Each figure comes from a fresh process running the loaders of ``--src`` (default: this checkout's plugin; pass
a worktree's ``plugins/rlm-context-documents/src`` to measure an earlier version the same way, the host staying
this checkout's). For the 500-page PDF: wall time of ``load`` with an empty cache and with the cache filled, and
peak memory of the loading process and of its children. For small files (one of each format): the mean time of a
load with the cache off, in a warm process (what each file of a folder costs). Then the bare cost of a bounded
child (``rlm_host.bounded.run_bounded`` of ``os.getpid``) by start method, and the issue's hostile files (nested
PDF form XObjects, an EPUB spine repeating one chapter 3,000 times, an EPUB and a DOCX unpacking to 300 MB, an
XLSX declaring ``A1:XFD1048576``): time to text or to the error, and peak memory.

    .venv/bin/python benchmarks/documents_bounded.py [--src DIR] [--pages 500] [--repeat 3] [--small 20]
                                                     [--bare 50] [--hostile SECONDS]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from documents import write_pdf  # noqa: E402

PLUGIN_SRC = Path(__file__).resolve().parents[1] / "plugins" / "rlm-context-documents" / "src"

PRELUDE = """
import json, re, resource, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
def hwm_mb():
    return int(re.search(r"VmHWM:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024
import rlm_host.config  # loaded before any context in `rlm run` (the cache's signing key lives beside it)
from rlm_host import HostServices
from rlm_context_documents.settings import DocumentSettings
"""

LOAD = PRELUDE + """
from rlm_context_documents.pdf import PdfLoader
loader = PdfLoader(DocumentSettings(), HostServices(home=Path(sys.argv[3])))
start = time.perf_counter()
pages = loader.load(Path(sys.argv[2]))
wall = time.perf_counter() - start
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"wall": wall, "peak_mb": hwm_mb(), "child_mb": children, "pages": len(pages)}))
"""

SMALL = PRELUDE + """
import importlib, threading
rounds, threaded = int(sys.argv[3]), sys.argv[4] == "1"
if threaded:  # another thread alive: the bounded runner picks a forkserver
    stop = threading.Event(); threading.Thread(target=stop.wait, daemon=True).start()
out = {}
for spec in sys.argv[2].split(","):
    module, cls, path = spec.split(":")
    loader = getattr(importlib.import_module("rlm_context_documents." + module), cls)(DocumentSettings(cache=False))
    loader.load(Path(path))  # warm: libraries imported, forkserver started
    start = time.perf_counter()
    for _ in range(rounds):
        loader.load(Path(path))
    out[Path(path).suffix[1:]] = (time.perf_counter() - start) / rounds
print(json.dumps(out))
"""

HOSTILE = PRELUDE + """
import importlib
module, cls, path = sys.argv[2].split(":")
loader = getattr(importlib.import_module("rlm_context_documents." + module), cls)(DocumentSettings(cache=False))
start = time.perf_counter()
try:
    loaded = loader.load(Path(path))
    outcome = f"text, {sum(map(len, [loaded] if isinstance(loaded, str) else loaded)):,} chars"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(getattr(exc, 'message', exc)).split(': ', 1)[-1][:70]}"
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"wall": time.perf_counter() - start, "peak_mb": hwm_mb(), "child_mb": children, "outcome": outcome}))
"""

BARE = """
import json, os, sys, time
from rlm_host.bounded import run_bounded
out = {}
for method in ("fork", "forkserver"):
    run_bounded(os.getpid, method=method)  # the forkserver starts here, once
    start = time.perf_counter()
    for _ in range(int(sys.argv[1])):
        run_bounded(os.getpid, method=method)
    out[method] = (time.perf_counter() - start) / int(sys.argv[1])
print(json.dumps(out))
"""


def run_json(code: str, *args: str, timeout: "float | None" = None) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                          timeout=timeout)
    return json.loads(done.stdout)


def small_files(folder: Path) -> str:
    sys.path.insert(0, str(PLUGIN_SRC))
    from rlm_context_documents import testing as samples

    fact = "Thermistor T4 failed at -41.7 C on day 117"
    files = [("pdf", "PdfLoader", samples.write_pdf(folder / "one.pdf", 1, fact)),
             ("office", "DocxLoader", samples.write_docx(folder / "one.docx", fact)),
             ("office", "PptxLoader", samples.write_pptx(folder / "one.pptx", fact)),
             ("office", "XlsxLoader", samples.write_xlsx(folder / "one.xlsx", fact)),
             ("web", "HtmlLoader", samples.write_html(folder / "one.html", fact)),
             ("web", "EpubLoader", samples.write_epub(folder / "one.epub", fact))]
    return ",".join(f"{module}:{cls}:{path}" for module, cls, path in files)


def hostile_files(folder: Path) -> list[str]:
    """The issue's attacks, written small (see the plugin's ``tests/documents_hostile.py``)."""
    sys.path.insert(0, str(PLUGIN_SRC.parent / "tests"))
    import documents_hostile as hostile

    spine = hostile.epub(folder / "spine.epub", {"c.xhtml": hostile.chapter("word " * 20_000)}, ["c.xhtml"] * 3000)
    return [f"pdf:PdfLoader:{hostile.nested_xobject_pdf(folder / 'nested.pdf')}",
            f"web:EpubLoader:{spine}",
            f"web:EpubLoader:{hostile.epub_bomb(folder / 'bomb.epub', 300)}",
            f"office:XlsxLoader:{hostile.xlsx_claiming_every_cell(folder / 'wide.xlsx')}",
            f"office:DocxLoader:{hostile.zip_bomb_docx(folder / 'node.docx', 300, text_node=True)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", default=str(PLUGIN_SRC), help="the plugin's src folder to measure")
    parser.add_argument("--pages", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small", type=int, default=20, help="loads per small file")
    parser.add_argument("--bare", type=int, default=50, help="bare bounded children per start method (0: skip)")
    parser.add_argument("--hostile", type=float, default=60, help="seconds allowed per hostile file (0: skip them)")
    options = parser.parse_args()
    src = str(Path(options.src).resolve())
    print(f"plugin source: {src}")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["XDG_CONFIG_HOME"] = str(Path(folder) / "config")  # the signing key of these runs
        pdf = Path(folder) / "report.pdf"
        write_pdf(pdf, options.pages)
        first, cached = [], []
        for index in range(options.repeat):
            home = str(Path(folder) / f"home{index}")
            first.append(run_json(LOAD, src, str(pdf), home))
            cached.append(run_json(LOAD, src, str(pdf), home))
        print(f"\n{options.pages}-page text PDF ({pdf.stat().st_size / 1e6:.2f} MB), median of {options.repeat}:")
        for label, runs, target in (("first load (extract + cache)", first, 5.0), ("cached load", cached, 0.2)):
            wall = statistics.median(r["wall"] for r in runs)
            print(f"  {label:<30} {wall:7.3f} s (target ≤ {target} s: {'ok' if wall <= target else 'OVER'})   "
                  f"peak RSS: loading process {max(r['peak_mb'] for r in runs):4.0f} MB, "
                  f"its children {max(r['child_mb'] for r in runs):4.0f} MB")
        files = small_files(Path(folder))
        for threaded in ("0", "1"):
            means = run_json(SMALL, src, files, str(options.small), threaded)
            how = "another thread alive (forkserver)" if threaded == "1" else "single-threaded host (fork)"
            print(f"\nsmall files, mean load with the cache off, {how}:")
            print("  " + "   ".join(f"{kind} {seconds * 1000:6.1f} ms" for kind, seconds in means.items()))
        if options.hostile:
            print(f"\nhostile files (default limits; stopped after {options.hostile:g} s):")
            for spec in hostile_files(Path(folder)):
                path = Path(spec.split(":")[2])
                try:
                    run = run_json(HOSTILE, src, spec, timeout=options.hostile)
                except subprocess.TimeoutExpired:
                    print(f"  {path.name:<12} {path.stat().st_size / 1024:6.1f} KB   > {options.hostile:g} s (killed)")
                    continue
                print(f"  {path.name:<12} {path.stat().st_size / 1024:6.1f} KB {run['wall']:7.2f} s   loading process "
                      f"{run['peak_mb']:5.0f} MB, children {run['child_mb']:5.0f} MB   {run['outcome']}")
        if options.bare:
            bare = run_json(BARE, str(options.bare))
            print("\nbare bounded child (run_bounded of os.getpid): "
                  + ", ".join(f"{method} {seconds * 1000:.1f} ms" for method, seconds in bare.items()))


if __name__ == "__main__":
    main()
