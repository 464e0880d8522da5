"""``rlm tui --web``: the app served by textual-serve on loopback, opened in headless Chromium; the app's own text
must reach the page (read from the page's websocket frames through Chrome's DevTools protocol)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from rlm_host.testing import chromium  # noqa: F401 (the chromium fixture)
from tui_support import sample_home

from rlm_tui.web import app_command, is_loopback

RLM = str(Path(sys.executable).with_name("rlm"))


def test_loopback_only_unless_asked():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")
    command = app_command(Path("/x/rlm.toml"), True, "latest")
    assert command.split()[1:] == ["-m", "rlm_host", "--config", "/x/rlm.toml", "--trust-config", "tui", "--run",
                                   "latest"]  # fmt: skip


def test_another_address_is_served_only_with_a_warning(monkeypatch, capsys):
    import textual_serve.server

    from rlm_tui import web

    served = []

    class FakeServer:
        def __init__(self, command, host, port, title):
            served.append((command, host, port))

        def serve(self):
            pass

    monkeypatch.setattr(textual_serve.server, "Server", FakeServer)
    web.serve(None, 9000)
    assert served[-1][1:] == ("127.0.0.1", 9000) and "WARNING" not in capsys.readouterr().err
    web.serve("0.0.0.0", 9001)
    assert served[-1][1:] == ("0.0.0.0", 9001) and "WARNING: serving on 0.0.0.0" in capsys.readouterr().err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {process.stderr.read() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


async def page_terminal_text(devtools: int, url: str, want: str, seconds: float = 60) -> str:
    """Open ``url`` in the browser and gather the text its websockets receive, until ``want`` is in it."""
    import websockets

    targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{devtools}/json/list", timeout=10).read())
    page = next(t for t in targets if t.get("type") == "page")
    seen = ""
    async with websockets.connect(page["webSocketDebuggerUrl"], max_size=None) as cdp:
        await cdp.send(json.dumps({"id": 1, "method": "Network.enable"}))
        await cdp.send(json.dumps({"id": 2, "method": "Page.navigate", "params": {"url": url}}))
        deadline = asyncio.get_running_loop().time() + seconds
        while want not in seen:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            try:
                message = json.loads(await asyncio.wait_for(cdp.recv(), timeout=left))
            except asyncio.TimeoutError:
                break
            if message.get("method") == "Network.webSocketFrameReceived":
                frame = message["params"]["response"]
                data = frame["payloadData"]
                raw = base64.b64decode(data) if frame.get("opcode") == 2 else data.encode()
                seen += re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode("utf-8", "replace"))
    return seen


@pytest.mark.slow
def test_the_served_app_reaches_a_browser(chromium, tmp_path):  # noqa: F811
    work = tmp_path / "work"
    sample_home(work / ".rlm")
    port, devtools = free_port(), free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RLM_")}, "HOME": str(tmp_path)}
    server = subprocess.Popen([RLM, "tui", "--web", "--port", str(port)], cwd=work, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    browser = None
    try:
        wait_port(port, server)
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                    f"--remote-debugging-port={devtools}", f"--user-data-dir={tmp_path / 'profile'}",
                                    "--window-size=1200,800", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        wait_port(devtools, browser)
        text = asyncio.run(page_terminal_text(devtools, f"http://127.0.0.1:{port}/", "F1 help"))
        assert "F1 help" in text, text[-2000:]
        print(f"\nthe page received {len(text):,} characters of the app, e.g. {text[text.index('F1 help'):][:60]!r}")
        assert "run_20261116" in text or "aaaa" in text or "What is the magic" in text  # the runs browser's rows
    finally:
        for process in (browser, server):
            if process is not None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
