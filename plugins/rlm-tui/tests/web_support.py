"""Helpers of the ``rlm tui --web`` tests: the real server in a subprocess (its printed URL and token), the app
processes it started, and a websocket client that types into the served app and reads its screen."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qs, urlsplit

RLM = str(Path(sys.executable).with_name("rlm"))
#: A CSI escape sequence (colours, cursor moves): left out of the screen text the tests search.
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


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


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (an app textual-serve started is one)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


@dataclass
class Served:
    """A running ``rlm tui --web``: its process, the URL it printed, that URL's token ("" when it printed none)."""

    process: subprocess.Popen
    port: int
    url: str
    lines: list[str] = field(default_factory=list)

    @property
    def token(self) -> str:
        return (parse_qs(urlsplit(self.url).query).get("token") or [""])[0]

    @property
    def origin(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"


@contextmanager
def served_tui(work: Path, home: Path, **env: str) -> Iterator[Served]:
    """``rlm tui --web`` started in ``work`` (HOME=``home``, no RLM_ variables), until the block ends."""
    port = free_port()
    environ = {**{k: v for k, v in os.environ.items() if not k.startswith("RLM_")}, "HOME": str(home), **env}
    process = subprocess.Popen([RLM, "tui", "--web", "--port", str(port)], cwd=work, env=environ, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[str] = []
    printed = threading.Event()

    def read(stream) -> None:
        for line in stream:
            lines.append(line)
            if "http://" in line:
                printed.set()

    for stream in (process.stdout, process.stderr):
        threading.Thread(target=read, args=(stream,), daemon=True).start()
    try:
        wait_port(port, process)
        assert printed.wait(30), "".join(lines)
        url = re.search(r"http://\S+", next(line for line in lines if "http://" in line)).group(0)
        yield Served(process, port, url, lines)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def screen_until(ws, want: str, seconds: float = 60) -> str:
    """The text the served app sends over ``ws`` (escape sequences left out), gathered until ``want`` is in it."""
    import aiohttp

    seen = ""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while want not in seen:
        left = deadline - loop.time()
        if left <= 0:
            break
        try:
            message = await asyncio.wait_for(ws.receive(), timeout=left)
        except asyncio.TimeoutError:
            break
        if message.type == aiohttp.WSMsgType.BINARY:
            seen += CSI.sub("", message.data.decode("utf-8", "replace"))
        elif message.type == aiohttp.WSMsgType.TEXT:
            seen += message.data
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            break
    return seen


async def type_line(ws, line: str) -> None:
    """Open the app's command line, type ``line`` and press enter, as keys from the browser."""
    await ws.send_json(["stdin", "/"])
    await asyncio.sleep(0.5)  # the command line takes the focus
    await ws.send_json(["stdin", line.removeprefix("/")])
    await asyncio.sleep(0.3)
    await ws.send_json(["stdin", "\r"])


class Listener:
    """A TCP server on loopback that records what each connection sends (a ``base_url`` an attacker would own)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    self.received.append(conn.recv(65536))
                    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


def wait_no_children(pid: int, seconds: float = 2.0) -> list[int]:
    """The server's child processes after ``seconds`` (an app started by a request would be one of them)."""
    time.sleep(seconds)
    return children(pid)


async def ws_status(session: Any, url: str, **kwargs: Any) -> int:
    """The websocket handshake's status: 101 when the app was opened, else the refusal's."""
    import aiohttp

    try:
        async with session.ws_connect(url, **kwargs) as ws:
            await ws.close()
            return 101
    except aiohttp.WSServerHandshakeError as exc:
        return exc.status
