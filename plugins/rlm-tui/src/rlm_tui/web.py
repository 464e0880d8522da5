"""``rlm tui --web``: the same app in a browser, through textual-serve, on loopback unless told otherwise.

textual-serve starts the command below once per browser connection and relays its terminal over a websocket.
Anyone who can reach the port can read every run and start runs, so the default address is 127.0.0.1; another
one must be given with ``--host`` and is served with a warning.
"""

from __future__ import annotations

from rlm_host.sdk.embedding import is_loopback_host
import shlex
import sys
from pathlib import Path
from typing import Optional

from rlm_host import ConfigError

DEFAULT_HOST = "127.0.0.1"


is_loopback = is_loopback_host  # the host's one check of a loopback name or address


def app_command(config_file: Optional[Path], trust: bool, run: Optional[str]) -> str:
    """The shell command textual-serve runs for each browser: this interpreter's ``rlm tui`` with the same config."""
    words = [sys.executable, "-m", "rlm_host", *(["--config", str(config_file)] if config_file else []),
             *(["--trust-config"] if trust else []), "tui", *(["--run", run] if run else [])]  # fmt: skip
    return shlex.join(words)


def serve(host: Optional[str], port: int, *, config_file: Optional[Path] = None, trust: bool = False,
          run: Optional[str] = None) -> None:  # fmt: skip
    address = host or DEFAULT_HOST
    if not address.strip():
        raise ConfigError("--host is empty", hint="leave it out to serve on 127.0.0.1")
    if not is_loopback(address):
        print(f"rlm tui: WARNING: serving on {address}, not loopback: anyone who reaches port {port} can read your "
              "runs and start runs with your keys; there is no login", file=sys.stderr, flush=True)  # fmt: skip
    from textual_serve.server import Server

    shown = f"[{address}]" if ":" in address else address
    print(f"rlm tui: serving the app at http://{shown}:{port} (stop with Ctrl-C)", file=sys.stderr, flush=True)
    Server(app_command(config_file, trust, run), host=address, port=port, title="rlm tui").serve()
