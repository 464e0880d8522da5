"""Reproduce docs/phoenix-trace.png: an Arize Phoenix server, one `rlm run --sink otel` into it, a headless
Chromium screenshot of the run tree's trace in the Phoenix UI.

    .venv/bin/python plugins/rlm-sink-otel/scripts/phoenix_screenshot.py [--out FILE] [--span agent|turn|sub-call|tool]
    [--keep]

Phoenix comes from .venv-phoenix (`bash scripts/install-phoenix.sh`). Everything lives in a temporary folder
(Phoenix's working directory and SQLite database, HOME, the scripted model's replies); the server is stopped and
the folder removed at the end unless --keep. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent  # .venv/bin: rlm
ROOT = Path(__file__).resolve().parents[3]  # the repository
PHOENIX = ROOT / ".venv-phoenix" / "bin" / "phoenix"
PROJECT = "rlm"
#: A root run that asks a sub-model (llm_query) and a child run (rlm_query), then answers.
REPLIES = [
    "```repl\nwords = context.split()\nkind = llm_query('Classify this text in one word: ' + context)\n"
    "summary = rlm_query('Summarise the context in five words', context)\nprint(len(words), kind, summary)\n```",
    "```repl\nprint(context[:24])\n```", "FINAL('sandboxed recursive language models')",  # the child run
    "FINAL_VAR('summary')",
]
SUB = {"rules": [{"match": "Classify", "text": "technical"}]}
CONTEXT = "Recursive language models keep the context in a sandbox and explore it with code. " * 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_phoenix(folder: Path) -> tuple[subprocess.Popen, str]:
    if not PHOENIX.exists():
        sys.exit(f"{PHOENIX} is missing: install Phoenix with `bash scripts/install-phoenix.sh`")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_", "RLM_"))}
    env |= {"HOME": str(folder), "PHOENIX_WORKING_DIR": str(folder / "phoenix"), "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(free_port()), "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false"}
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen([str(PHOENIX), "serve"], cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    started = time.monotonic()
    while time.monotonic() - started < 90 and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=1):
                print(f"phoenix up in {time.monotonic() - started:.1f} s at {url}")
                return process, url
        except OSError:
            time.sleep(0.2)
    stop(process)
    sys.exit(f"phoenix serve did not start:\n{(folder / 'server.log').read_text()[-2000:]}")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)


def record_run(folder: Path, url: str) -> dict:
    (folder / "root.json").write_text(json.dumps(REPLIES))
    (folder / "sub.json").write_text(json.dumps(SUB))
    (folder / "context.txt").write_text(CONTEXT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OTEL_"))}
    env |= {"HOME": str(folder), "RLM_TRUST_CONFIG": "1", "RLM_PLUGINS": "rlm-sink-otel",
            "RLM_SINK__OTEL__ENDPOINT": f"{url}/v1/traces", "RLM_SINK__OTEL__METRICS": "false",
            "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}"}
    done = subprocess.run([str(BIN / "rlm"), "run", "What is this text about?", "--context", "context.txt",
                           "--model", "scripted:root.json", "--sub-model", "scripted:sub.json", "--sandbox", "process",
                           "--max-depth", "1", "--sink", "otel", "--json", "-q"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"rlm run failed:\n{done.stderr}")
    return json.loads(done.stdout)


def spans(url: str, trace_id: str, count: int = 9, timeout: float = 30) -> list[dict]:
    """The trace's spans from Phoenix's REST API once ``count`` have arrived."""
    deadline = time.monotonic() + timeout
    found: list[dict] = []
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{PROJECT}/spans?limit=1000", timeout=5) as response:
                found = [s for s in json.loads(response.read())["data"] if s["context"]["trace_id"] == trace_id]
        except OSError:
            found = []
        if len(found) >= count:
            return found
        time.sleep(0.3)
    sys.exit(f"Phoenix holds {len(found)} span(s) of trace {trace_id} after {timeout:.0f} s, expected {count}")


#: The span shown selected: Phoenix kind and rlm.role of the root run's first such span.
SPANS = {"agent": ("AGENT", None), "turn": ("LLM", "root"), "sub-call": ("LLM", "sub"), "tool": ("TOOL", None)}


def page_url(url: str, run_id: str, span: str) -> str:
    """The trace page with one span selected (SPANS): the root run, its first model turn, its llm_query sub-call
    (input and reply fit in one screen) or its code step."""
    from rlm_host.sdk.observability import trace_id_for

    trace_id = trace_id_for(run_id)
    found = spans(url, trace_id)
    mine = sorted((s for s in found if s["attributes"].get("rlm.run_id") == run_id), key=lambda s: s["start_time"])
    kind, role = SPANS[span]
    selected = next(s for s in mine if s["span_kind"] == kind and s["attributes"].get("rlm.role") == role)
    with urllib.request.urlopen(f"{url}/v1/projects/{PROJECT}", timeout=5) as response:
        project_id = json.loads(response.read())["data"]["id"]
    return f"{url}/projects/{project_id}/traces/{trace_id}?selectedSpanNodeId={selected['id']}"


def screenshot(target: str, out: Path, folder: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", f"--user-data-dir={folder / 'chromium'}", "--window-size=1500,950",
                    "--virtual-time-budget=20000", f"--screenshot={out}", target],
                   check=True, capture_output=True, timeout=120)
    if out.stat().st_size > 300_000:  # a 256-colour palette keeps a UI screenshot sharp and small
        from PIL import Image

        Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)
    print(f"{out} ({out.stat().st_size // 1024} KB) from {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "phoenix-trace.png")
    parser.add_argument("--span", choices=tuple(SPANS), default="sub-call", help="the span shown selected")
    parser.add_argument("--keep", action="store_true", help="leave the server running")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rlm-phoenix-shot-"))
    process, url = start_phoenix(folder)
    try:
        result = record_run(folder, url)
        print(f"run {result['run_id']}: {result['final_response']!r}, {result['steps']} steps")
        screenshot(page_url(url, result["run_id"], args.span), args.out, folder)
    finally:
        if args.keep:
            print(f"server left running at {url} (pid {process.pid}, folder {folder})")
        else:
            stop(process)
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
