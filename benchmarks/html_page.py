"""How long does a run's page (``rlm runs export RUN --format html``) take to open, against the run's length?

Writes the page of a synthetic run of 100, 1,000 and 10,000 steps (each with a reply, code, output and a variable)
and opens each in headless Chromium with ``--dump-dom``, which returns once the page's script has drawn it. The
time of an empty page is the browser's own start; what a page adds to it is the page's cost. The issue's bar is
under 2 s for 10,000 steps.

    .venv/bin/python benchmarks/html_page.py [--steps 100,1000,10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from rlm_export_html.page import write


def events(steps: int) -> list[dict]:
    run_id = "run_20260101_000000_000000_abcd"
    base = {"run_id": run_id, "root_run_id": run_id, "parent_run_id": None, "depth": 0, "ts": 0.0}
    out = [{**base, "type": "run_start", "seq": 0, "data": {"task": "count", "model": "m"}}]
    for n in range(1, steps + 1):
        out.append({**base, "type": "step", "seq": n, "data": {
            "step": n, "action": "run_code", "reply": f"```repl\nx = {n}\nprint(x * 2)\n```", "code": f"x = {n}\n",
            "observation": {"blocks": [{"code": f"x = {n}", "stdout": f"{2 * n}\n"}], "success": True,
                            "variables": [{"name": "x", "type": "int", "repr": str(n)}]},
            "reward": 0.1, "usage": {"root": {"input_tokens": 900, "output_tokens": 20, "cost": 0.0}},
            "duration_s": 0.01}})
    out.append({**base, "type": "final", "seq": steps + 1, "data": {"final_response": "done", "steps": steps}})
    return out


def open_seconds(chromium: str, page: Path, profile: Path) -> float:
    started = time.perf_counter()
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                    "--dump-dom", page.as_uri()], capture_output=True, check=True, timeout=300)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("needs chromium on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        empty = folder / "empty.html"
        empty.write_text("<!DOCTYPE html><title>empty</title>")
        open_seconds(chromium, empty, folder / "profile")  # the first start writes the profile
        baseline = statistics.median(open_seconds(chromium, empty, folder / "profile") for _ in range(args.repeat))
        print(f"browser start (an empty page): {baseline:.2f} s")
        for steps in (int(n) for n in args.steps.split(",")):
            page = folder / f"run-{steps}.html"
            started = time.perf_counter()
            with page.open("w", encoding="utf-8") as out:
                write(events(steps), out)
            written = time.perf_counter() - started
            seconds = statistics.median(open_seconds(chromium, page, folder / "profile") for _ in range(args.repeat))
            print(f"{steps:>6} steps: {page.stat().st_size / 1e6:6.1f} MB written in {written:.2f} s; opens in "
                  f"{seconds:.2f} s, {seconds - baseline:+.2f} s over an empty page")


if __name__ == "__main__":
    main()
