"""``rlm tui --web`` attacked as a page of another origin would attack it, through the real server (``rlm tui --web``
in a subprocess, real HTTP requests and websockets), and the served app opened in headless Chromium.

Only the URL the command printed (its token) gets the app: no token, a wrong one, a foreign ``Host`` (DNS
rebinding) or a foreign websocket ``Origin`` get 403 and start no app process. A browser session cannot weaken
the sandbox or send the user's key to a server it names, and the app it starts never imports from the working
folder (a cloned project's ``typer.py`` or plugin).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest
from support.browser import chromium  # noqa: F401 (the chromium fixture; tests/support)
from tui_support import sample_home
from web_support import (Listener, Served, children, free_port, screen_until, served_tui, type_line, wait_port,
                         ws_status)

from rlm_host.sdk.commands import is_loopback_host as is_loopback
from rlm_tui.web import app_command

SCREEN = "?width=250&height=40"  # wide enough for one message line to hold a whole refusal


def test_loopback_only_unless_asked():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.com")
    command = app_command(Path("/x/rlm.toml"), True, "latest")
    assert command.split()[1:] == ["-P", "-m", "rlm_host", "--config", "/x/rlm.toml", "--trust-config", "tui",
                                   "--run", "latest", "--browser-session"]


def cloned_project(work: Path) -> list[Path]:
    """What a cloned repository may hold in the working folder: a ``typer.py`` shadowing the library and an
    installed-looking plugin (``*.dist-info`` with an ``rlm`` entry point); each writes a marker when imported."""
    markers = [work / "typer-ran", work / "plugin-ran"]
    (work / "typer.py").write_text(f"open({str(markers[0])!r}, 'w').write('typer.py of the working folder ran')\n")
    (work / "evil_plugin.py").write_text(f"open({str(markers[1])!r}, 'w').write('the folder plugin ran')\n")
    info = work / "evil_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[rlm]\nevil = evil_plugin\n")
    return markers


async def status_of(session, url: str, **headers: str) -> int:
    async with session.get(url, headers=headers, allow_redirects=True) as response:
        return response.status


async def attacks(served: Served) -> dict[str, int]:
    """Every way in that is not the printed URL, each with its HTTP status."""
    import aiohttp

    base, port, token = f"http://127.0.0.1:{served.port}", served.port, served.token
    ws_url = f"ws://127.0.0.1:{port}/ws{SCREEN}"
    found = {}
    async with aiohttp.ClientSession() as stranger:  # no cookie: a page of another origin
        found["page without token"] = await status_of(stranger, f"{base}/")
        found["page with a wrong token"] = await status_of(stranger, f"{base}/?token=wrong-{token}")
        found["page with the token, foreign Host"] = await status_of(stranger, f"{base}/?token={token}",
                                                                     Host=f"evil.example:{port}")
        found["websocket without token"] = await ws_status(stranger, ws_url, origin=served.origin)
        found["websocket, token in the query"] = await ws_status(stranger, f"{ws_url}&token={token}",
                                                                 origin=f"http://evil.example:{port}")
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as holder:  # has the cookie
        assert await status_of(holder, served.url) == 200
        found["websocket, foreign Origin"] = await ws_status(holder, ws_url, origin=f"http://evil.example:{port}")
        found["websocket, no Origin"] = await ws_status(holder, ws_url)
        found["websocket, rebound Host"] = await ws_status(holder, ws_url, origin=f"http://evil.example:{port}",
                                                           headers={"Host": f"evil.example:{port}"})
    return found


async def open_app(served: Served, *lines: str, want: str = "F1 help", seconds: float = 60) -> str:
    """Open the printed URL as the browser does (its cookie), then the app's websocket; type ``lines``; the
    screen text until ``want``."""
    import aiohttp

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
        assert await status_of(session, served.url) == 200
        async with session.ws_connect(f"ws://127.0.0.1:{served.port}/ws{SCREEN}", origin=served.origin) as ws:
            text = await screen_until(ws, "F1 help", seconds)
            assert "F1 help" in text, text[-2000:]
            for line in lines:
                await type_line(ws, line)
            return text + await screen_until(ws, want, seconds) if lines else text


@pytest.mark.slow
def test_only_the_printed_url_gets_the_app(tmp_path):
    work = tmp_path / "work"
    sample_home(work / ".rlm")
    with served_tui(work, tmp_path) as served:
        refused = asyncio.run(attacks(served))
        assert refused == {name: 403 for name in refused}, refused
        assert children(served.process.pid) == []  # no app process was started for any of them
        assert len(served.token) >= 32, served.url  # a per-launch secret in the printed URL
        text = asyncio.run(open_app(served))
        assert "run_20261116" in text or "What is the magic" in text  # the runs browser's rows
        print(f"\nrefused: {', '.join(refused)}; the printed URL opened the app")


@pytest.mark.slow
def test_a_browser_session_cannot_weaken_the_sandbox_or_send_the_key_elsewhere(tmp_path):
    work = tmp_path / "work"
    sample_home(work / ".rlm")
    before = sorted((work / ".rlm" / "runs").iterdir())
    attacker = Listener()
    try:
        with served_tui(work, tmp_path, OPENAI_API_KEY="sk-attack-test-0123456789") as served:
            line = f'/rlm run "x" sandbox=process base_url={attacker.url}'
            text = asyncio.run(open_app(served, line, want="may not", seconds=30))
    finally:
        attacker.close()
    assert attacker.received == [], attacker.received  # the key never left for the page's server
    assert sorted((work / ".rlm" / "runs").iterdir()) == before  # no run started
    message = text[text.index("a browser session may not"):][:250]
    assert "sandbox=process" in message and "base_url=" in message, message
    print(f"\nthe browser was told: {message}")


@pytest.mark.slow
def test_the_served_app_does_not_import_from_the_working_folder(tmp_path):
    work = tmp_path / "work"
    sample_home(work / ".rlm")
    markers = cloned_project(work)
    with served_tui(work, tmp_path) as served:
        try:
            text = asyncio.run(open_app(served))
        except AssertionError as exc:  # the app did not come up: say first what ran from the folder
            text = str(exc)
        ran = [marker.read_text() for marker in markers if marker.exists()]
        assert ran == [], ran
        assert "F1 help" in text, text


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
    devtools = free_port()
    with served_tui(work, tmp_path) as served:
        browser = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                    f"--remote-debugging-port={devtools}", f"--user-data-dir={tmp_path / 'profile'}",
                                    "--window-size=1200,800", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(devtools, browser)
            text = asyncio.run(page_terminal_text(devtools, served.url, "F1 help"))
        finally:
            browser.terminate()
            try:
                browser.wait(timeout=10)
            except subprocess.TimeoutExpired:
                browser.kill()
    assert "F1 help" in text, text[-2000:]
    print(f"\nthe page received {len(text):,} characters of the app, e.g. {text[text.index('F1 help'):][:60]!r}")
    assert "run_20261116" in text or "aaaa" in text or "What is the magic" in text  # the runs browser's rows
