"""The door of ``rlm tui --web`` (``rlm_tui.web_guard``) on a real aiohttp server in this process: textual-serve's
application as ``rlm tui --web`` builds it, serving a command that leaves a mark when it starts, so each test sees
whether a request started an app. The served rlm app itself is attacked in ``test_tui_web.py`` (slow)."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from web_support import free_port, ws_status

from rlm_tui import web as tui_web
from rlm_tui.web_guard import WebGuard

TOKEN = "test-token-" + "x" * 32


@asynccontextmanager
async def guarded(tmp_path: Path, address: str = "127.0.0.1"):
    """The guarded server on ``address`` and a free port; yields (guard, mark file) and stops it after."""
    mark = tmp_path / "app-started"
    guard = WebGuard(address, free_port(), TOKEN)
    server = tui_web.guarded_server(shlex.join(["touch", str(mark)]), guard)
    runner = web.AppRunner(await server._make_app())
    await runner.setup()
    await web.TCPSite(runner, address, guard.port).start()
    try:
        yield guard, mark
    finally:
        await runner.cleanup()


def started(mark: Path, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not mark.exists():
        time.sleep(0.05)
    return mark.exists()


def test_the_token_url_sets_a_strict_cookie_and_opens_the_app(tmp_path):
    async def body():
        async with guarded(tmp_path) as (guard, mark):
            jar = aiohttp.CookieJar(unsafe=True)
            async with aiohttp.ClientSession(cookie_jar=jar) as session:
                async with session.get(f"{guard.origin}/?token={TOKEN}&fontsize=18", allow_redirects=False) as first:
                    assert first.status == 303 and first.headers["Location"] == f"{guard.origin}/?fontsize=18"
                    cookie = first.cookies[guard.cookie]
                    assert cookie.value == TOKEN and cookie["httponly"] and cookie["samesite"] == "Strict"
                async with session.get(f"{guard.origin}/?fontsize=18") as page:
                    assert page.status == 200 and "data-session-websocket-url" in await page.text()
                async with session.get(f"{guard.origin}/static/js/textual.js") as script:
                    assert script.status == 200
                assert not mark.exists()  # a page is not an app
                async with session.get(f"{guard.origin}//evil.example/?token={TOKEN}", allow_redirects=False) as odd:
                    assert odd.headers["Location"].startswith(f"{guard.origin}/")  # never off this origin
                assert await ws_status(session, f"ws://127.0.0.1:{guard.port}/ws", origin=guard.origin) == 101
            return mark

    assert started(asyncio.run(body()))


def test_strangers_get_403_and_start_nothing(tmp_path):
    async def body():
        async with guarded(tmp_path) as (guard, mark):
            ws, port, found = f"ws://127.0.0.1:{guard.port}/ws", guard.port, {}
            async with aiohttp.ClientSession() as stranger:
                for name, url, headers in [("no token", "/", {}), ("wrong token", f"/?token={TOKEN}x", {}),
                                           ("empty token", "/?token=", {}),
                                           ("static file", "/static/js/textual.js", {}),
                                           ("rebound Host", f"/?token={TOKEN}", {"Host": f"evil.example:{port}"}),
                                           ("other port", f"/?token={TOKEN}", {"Host": f"127.0.0.1:{port + 1}"}),
                                           ("no port", f"/?token={TOKEN}", {"Host": "127.0.0.1"})]:
                    async with stranger.get(f"{guard.origin}{url}", headers=headers, allow_redirects=False) as reply:
                        found[name] = reply.status
                found["websocket, no cookie"] = await ws_status(stranger, ws, origin=guard.origin)
                found["websocket, wrong token"] = await ws_status(stranger, f"{ws}?token=nope", origin=guard.origin)
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as holder:
                async with holder.get(f"{guard.origin}/?token={TOKEN}") as page:
                    assert page.status == 200
                found["websocket, foreign Origin"] = await ws_status(holder, ws, origin=f"http://evil.example:{port}")
                found["websocket, localhost Origin"] = await ws_status(holder, ws, origin=f"http://localhost:{port}")
                found["websocket, no Origin"] = await ws_status(holder, ws)
                found["websocket, rebound Host"] = await ws_status(
                    holder, ws, origin=f"http://evil.example:{port}", headers={"Host": f"evil.example:{port}"})
            return found, mark

    found, mark = asyncio.run(body())
    assert found == {name: 403 for name in found}, found
    assert not started(mark, 1.0)


def test_a_refusal_is_one_line_on_the_terminal_with_nothing_of_the_page_sent(tmp_path, capfd):
    async def body():
        async with guarded(tmp_path) as (guard, _):
            async with aiohttp.ClientSession() as stranger:
                async with stranger.get(f"{guard.origin}/%1b%5b2J%c2%9b%07x") as reply:
                    return reply.status

    assert asyncio.run(body()) == 403
    err = capfd.readouterr().err
    assert "rlm tui: refused GET /␛[2J??x: no token" in err and "\x1b" not in err and "\x9b" not in err


def test_another_loopback_name_is_sent_to_the_printed_origin(tmp_path):
    async def body():
        async with guarded(tmp_path) as (guard, _):
            async with aiohttp.ClientSession() as session:
                url = f"{guard.origin}/?token={TOKEN}"
                host = {"Host": f"localhost:{guard.port}"}
                async with session.get(url, headers=host, allow_redirects=False) as reply:
                    return reply.status, reply.headers.get("Location"), guard

    status, location, guard = asyncio.run(body())
    assert status == 307 and location == f"{guard.origin}/?token={TOKEN}"


def test_a_network_address_accepts_only_its_own_name():
    guard = WebGuard("192.168.1.5", 8766, TOKEN)
    assert guard.names_this_server("192.168.1.5:8766")
    assert not guard.names_this_server("127.0.0.1:8766") and not guard.names_this_server("evil.example:8766")
    assert not guard.names_this_server("192.168.1.5:8767") and not guard.names_this_server("[::1")
    v6 = WebGuard("::1", 8766, TOKEN)
    assert v6.origin == "http://[::1]:8766" and v6.names_this_server("[::1]:8766") and v6.is_canonical("[::1]:8766")
    assert v6.names_this_server("localhost:8766") and not v6.is_canonical("localhost:8766")


def test_serve_prints_the_token_url_and_refuses_every_interface(monkeypatch, capsys):
    from rlm_host import ConfigError

    served = []
    monkeypatch.setattr(tui_web, "guarded_server", lambda command, guard: served.append((command, guard)) or
                        type("Quiet", (), {"serve": lambda self: None})())
    tui_web.serve(None, 9000)
    command, guard = served[-1]
    err = capsys.readouterr().err
    assert (guard.address, guard.port) == ("127.0.0.1", 9000) and len(guard.token) >= 32
    assert f"open http://127.0.0.1:9000/?token={guard.token}" in err and "WARNING" not in err
    assert command.endswith("tui --browser-session")
    tui_web.serve(None, 9000)
    assert served[-1][1].token != guard.token  # a new secret each launch
    tui_web.serve("192.168.1.5", 9001)
    assert "WARNING: serving on 192.168.1.5" in capsys.readouterr().err
    for everywhere in ("0.0.0.0", "::"):
        with pytest.raises(ConfigError, match="every interface"):
            tui_web.serve(everywhere, 9002)
    tui_web.serve(None, 0)
    assert served[-1][1].port > 0  # the printed URL names the port that is bound


def test_the_app_command_never_imports_from_the_working_folder(tmp_path):
    """textual-serve runs the command through the shell in the server's working folder (a cloned project's)."""
    mark = tmp_path / "typer-ran"
    (tmp_path / "typer.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    (tmp_path / "rlm_host.py").write_text(f"open({str(mark)!r}, 'w').write('ran')\n")
    command = tui_web.app_command(None, False, None) + " --help"
    done = subprocess.run([shutil.which("sh") or "/bin/sh", "-c", command], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert not mark.exists()
    assert done.returncode == 0 and "--browser-session" not in done.stdout, done.stderr  # the hidden flag
    assert "Browse saved runs" in done.stdout  # the installed rlm (editable installs too) answered
