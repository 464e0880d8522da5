"""Reproduce docs/mlflow-run-tree.png and docs/mlflow-chat-span.png: an MLflow server, one `rlm run` through the
`mlflow` sink, headless Chromium screenshots of the run tree's trace in the MLflow UI.

    .venv/bin/python plugins/rlm-sink-mlflow/scripts/screenshot.py [--out FILE] [--view trace|runs|run]
        [--span NAME [--nth N]] [--also NAME=FILE…] [--keep]

`--span` clicks the N-th span of that name in the trace's span tree before the picture (the root span is shown
otherwise): Chromium is then driven over the DevTools protocol (the `websockets` package). `--also` takes more
pictures of the same run, one per span name. Everything lives in a temporary folder (SQLite store, artifacts,
HOME, the scripted model's replies); the server is stopped at the end unless --keep. Needs the full `mlflow`
package (the server) and /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent
QUIET = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
#: A root run that asks a sub-model (llm_query) and a child run (rlm_query), then answers.
ROOT = [
    "```repl\nwords = context.split()\nkind = llm_query('Classify this text in one word: ' + context)\n"
    "summary = rlm_query('Summarise the context in five words', context)\nprint(len(words), kind, summary)\n```",
    "```repl\nprint(context[:24])\n```", "FINAL('a few words of context')",  # the child run
    "FINAL_VAR(summary)",
]
SUB = {"rules": [{"match": "Classify", "text": "prose"}]}
#: The UI is opened under this name (mapped to 127.0.0.1 in Chromium): MLflow's assistant panel, which opens by
#: itself over half the page, is only offered on localhost.
UI_HOST = "mlflow-ui.test"
CONTEXT = "Recursive language models keep the context in a sandbox and explore it with code. " * 3


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [str(BIN / "mlflow"), "server", "--backend-store-uri", f"sqlite:///{folder}/mlflow.db",
               "--artifacts-destination", str(folder / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
               "--workers", "1", "--allowed-hosts", f"{UI_HOST}:{port},127.0.0.1:{port},localhost:{port}",
               "--cors-allowed-origins", f"http://{UI_HOST}:{port}"]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    started = time.monotonic()
    while time.monotonic() - started < 60:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                print(f"server up in {time.monotonic() - started:.1f} s at {url}")
                return process, url
        except OSError:
            time.sleep(0.2)
    os.killpg(process.pid, signal.SIGTERM)
    sys.exit(f"mlflow server did not start:\n{(folder / 'server.log').read_text()[-2000:]}")


def record_run(folder: Path, env: dict[str, str], url: str) -> dict:
    (folder / "root.json").write_text(json.dumps(ROOT))
    (folder / "sub.json").write_text(json.dumps(SUB))
    (folder / "context.txt").write_text(CONTEXT)
    run_env = env | {"RLM_RUN__SINKS": '["mlflow"]', "RLM_SINK__MLFLOW__TRACKING_URI": url}
    done = subprocess.run([str(BIN / "rlm"), "run", "What is this text about?", "--context", "context.txt",
                           "--model", "scripted:root.json", "--sub-model", "scripted:sub.json", "--sandbox", "process",
                           "--max-depth", "1", "--json", "-q"], cwd=folder, env=run_env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"rlm run failed:\n{done.stderr}")
    return json.loads(done.stdout)


def page_url(url: str, run_id: str, view: str) -> str:
    """The UI page: the trace of the run tree, or the experiment's runs (nested: root and child runs)."""
    from mlflow import MlflowClient

    from rlm_host.sdk.observability import trace_id_for

    client = MlflowClient(url)
    experiment = client.get_experiment_by_name("rlm").experiment_id
    url = url.replace("127.0.0.1", UI_HOST)
    if view == "runs":
        return f"{url}/#/experiments/{experiment}/runs"
    if view == "run":  # the root run's page: its description holds the task and the answer
        (root,) = client.search_runs([experiment], f"tags.`rlm.run_id` = '{run_id}'")
        return f"{url}/#/experiments/{experiment}/runs/{root.info.run_id}"
    return f"{url}/#/experiments/{experiment}/traces?selectedEvaluationId=tr-{trace_id_for(run_id)}"


def screenshot(target: str, out: Path, folder: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    "--no-first-run", f"--user-data-dir={folder / 'chromium'}",
                    f"--host-resolver-rules=MAP {UI_HOST} 127.0.0.1", "--window-size=1400,1000",
                    "--virtual-time-budget=20000", f"--screenshot={out}", target],
                   check=True, capture_output=True, timeout=120)
    _shrink(out)
    print(f"{out} ({out.stat().st_size // 1024} KB) from {target}")


#: Clicks the n-th element whose own text is the span's name, in the span tree (left pane), and reports it.
CLICK = """(() => {
  const hits = [...document.querySelectorAll('span, div')].filter(e => e.childElementCount === 0
                 && e.textContent.trim() === %s && e.getBoundingClientRect().left < 450);
  const hit = hits[%d];
  if (!hit) return 'found ' + hits.length;
  hit.click();
  return 'clicked';
})()"""


async def _devtools_picture(port: int, target: str, out: Path, span: str, nth: int) -> None:
    import websockets

    async def call(socket, method: str, **params):
        call.id += 1
        await socket.send(json.dumps({"id": call.id, "method": method, "params": params}))
        while True:
            answer = json.loads(await socket.recv())
            if answer.get("id") == call.id:
                return answer.get("result", {})

    call.id = 0
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as response:
        page = next(t for t in json.load(response) if t["type"] == "page")
    async with websockets.connect(page["webSocketDebuggerUrl"], max_size=2**26) as socket:
        await call(socket, "Emulation.setDeviceMetricsOverride", width=1400, height=1000, deviceScaleFactor=1,
                   mobile=False)
        await call(socket, "Page.navigate", url=target)
        clicked = ""
        for _ in range(60):  # the trace drawer loads in a few seconds
            await asyncio.sleep(0.5)
            result = await call(socket, "Runtime.evaluate", expression=CLICK % (json.dumps(span), nth),
                                returnByValue=True)
            clicked = result.get("result", {}).get("value", "")
            if clicked == "clicked":
                break
        if clicked != "clicked":
            sys.exit(f"no span {span!r} (#{nth}) in the page: {clicked}")
        await asyncio.sleep(3)
        shot = await call(socket, "Page.captureScreenshot", format="png")
    out.write_bytes(base64.b64decode(shot["data"]))


def screenshot_span(target: str, out: Path, folder: Path, span: str, nth: int = 0) -> None:
    """A picture of the page with span ``span`` selected (Chromium driven over the DevTools protocol)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    browser = subprocess.Popen(["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                                "--hide-scrollbars", "--disable-background-networking", "--disable-component-update",
                                "--disable-sync", "--no-first-run", f"--user-data-dir={folder / 'chromium-cdp'}",
                                f"--host-resolver-rules=MAP {UI_HOST} 127.0.0.1", "--window-size=1400,1000",
                                f"--remote-debugging-port={port}", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        asyncio.run(_devtools_picture(port, target, out, span, nth))
    finally:
        browser.terminate()
        browser.wait(10)
    _shrink(out)
    print(f"{out} ({out.stat().st_size // 1024} KB) from {target}, span {span!r}")


def _shrink(out: Path) -> None:
    if out.stat().st_size > 300_000:  # a 256-colour palette keeps a UI screenshot sharp and small
        from PIL import Image

        Image.open(out).convert("RGB").quantize(256).save(out, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parents[1] / "docs" / "mlflow-run-tree.png"
    parser.add_argument("--out", type=Path, default=default)
    parser.add_argument("--view", choices=("trace", "runs", "run"), default="trace")
    parser.add_argument("--span", help="select this span (by name) in the trace view before the picture")
    parser.add_argument("--nth", type=int, default=0, help="which span of that name (0: the first)")
    parser.add_argument("--also", nargs="*", default=[], metavar="NAME=FILE",
                        help="more pictures of the trace view, with span NAME selected, into FILE")
    parser.add_argument("--keep", action="store_true", help="leave the server running")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="rlm-mlflow-shot-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "MLFLOW_"))}
    env |= QUIET | {"HOME": str(folder), "RLM_PLUGINS": "rlm-sink-mlflow"}
    os.environ.update(QUIET | {"HOME": str(folder)})  # this process imports mlflow too
    process, url = start_server(folder, env)
    try:
        result = record_run(folder, env, url)
        print(f"run {result['run_id']}: {result['final_response']!r}, {result['steps']} steps")
        target = page_url(url, result["run_id"], args.view)
        if args.span:
            screenshot_span(target, args.out, folder, args.span, args.nth)
        else:
            screenshot(target, args.out, folder)
        for extra in args.also:
            name, _, file = extra.partition("=")
            screenshot_span(page_url(url, result["run_id"], "trace"), Path(file), folder, name)
    finally:
        if args.keep:
            print(f"server left running at {url} (pid {process.pid}, folder {folder})")
        else:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(10)


if __name__ == "__main__":
    main()
