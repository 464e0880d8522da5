"""``rlm tui --web``: the same app in a browser, through textual-serve, on loopback unless told otherwise.

textual-serve starts the command below once per browser connection and relays its terminal over a websocket.
Only the URL printed at start opens it (a per-launch token; ``rlm_tui.web_guard`` checks it, the ``Host`` and
the websocket's ``Origin``), and each app runs as a browser session: the launching user's settings are its
ceilings (``rlm_tui.browser_session``). Another address than loopback must be given with ``--host`` and is
served with a warning.
"""

from __future__ import annotations

import ipaddress
import secrets
import shlex
import socket
import sys
from pathlib import Path
from typing import Any, Optional

from rlm_host import ConfigError
from rlm_host.sdk.commands import is_loopback_host

from rlm_tui.web_guard import WebGuard, middleware

DEFAULT_HOST = "127.0.0.1"


def app_command(config_file: Optional[Path], trust: bool, run: Optional[str]) -> str:
    """The shell command textual-serve runs for each browser: this interpreter's ``rlm tui`` with the same config,
    as a browser session. ``-P`` keeps the working folder off ``sys.path``, as the ``rlm`` script does: a cloned
    project's ``typer.py`` or ``*.dist-info`` plugin there is never imported."""
    words = [sys.executable, "-P", "-m", "rlm_host", *(["--config", str(config_file)] if config_file else []),
             *(["--trust-config"] if trust else []), "tui", *(["--run", run] if run else []),
             "--browser-session"]
    return shlex.join(words)


def is_wildcard(address: str) -> bool:
    """Whether ``address`` means every interface (``0.0.0.0``, ``::``): no single origin a browser could name."""
    try:
        return ipaddress.ip_address(address.strip("[]")).is_unspecified
    except ValueError:
        return False


def free_port(address: str) -> int:
    """A port nobody listens on at ``address`` now (the printed URL must name the port the server binds)."""
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as sock:
        sock.bind((address.strip("[]"), 0))
        return sock.getsockname()[1]


def guarded_server(command: str, guard: WebGuard) -> Any:
    """textual-serve's ``Server`` for ``command`` with ``guard`` in front of every route."""
    from textual_serve.server import Server

    class GuardedServer(Server):
        async def _make_app(self) -> Any:
            app = await super()._make_app()
            app.middlewares.append(middleware(guard))
            return app

        async def on_startup(self, app: Any) -> None:
            """Quiet: ``serve`` printed the URL to open (textual-serve's own line has no token)."""

    return GuardedServer(command, host=guard.address, port=guard.port, title="rlm tui", public_url=guard.origin)


def serve(host: Optional[str], port: int, *, config_file: Optional[Path] = None, trust: bool = False,
          run: Optional[str] = None) -> None:
    """Serve the app on ``host:port`` (0: a free port) until interrupted; prints the URL, with its token, to open."""
    address = (host or DEFAULT_HOST).strip()
    if not address:
        raise ConfigError("--host is empty", hint="leave it out to serve on 127.0.0.1")
    if is_wildcard(address):
        raise ConfigError(f"--host {address} is every interface: the server checks that a browser names it, so it "
                          "needs one address", hint="give this machine's address on the network, e.g. "
                          "--host 192.168.1.5 (or leave --host out for 127.0.0.1)")
    guard = WebGuard(address, port or free_port(address), secrets.token_urlsafe(32))
    if not is_loopback_host(address):
        print(f"rlm tui: WARNING: serving on {address}, not loopback: anyone who reaches port {guard.port} and has "
              "the URL's token can read your runs and start runs with your keys, over plain HTTP",
              file=sys.stderr, flush=True)
    server = guarded_server(app_command(config_file, trust, run), guard)
    print(f"rlm tui: open {guard.origin}/?token={guard.token} (stop with Ctrl-C)", file=sys.stderr, flush=True)
    server.serve()
