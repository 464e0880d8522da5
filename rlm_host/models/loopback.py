"""Local model servers: whether a base URL is on this machine, whether anything listens there (a TCP connect
with a short timeout, several in parallel), and what to say when nothing does."""

from __future__ import annotations

import ipaddress
import socket
from functools import partial
from urllib.parse import urlsplit

from rlm_host.threads import submit


def host_port(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an http(s) URL, the scheme's port when none is written; None when it has no host."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None


def is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    found = host_port(url)
    return found is not None and is_loopback_host(found[0])


def is_loopback_host(host: str) -> bool:
    """Whether a host name or address (``[::1]`` too) is this machine's: what a server may bind without exposing
    itself (``rlm mcp serve``, ``rlm tui --web``)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening(url: str, timeout: float = 0.3) -> bool:
    """Whether a TCP connection to ``url``'s host and port succeeds within ``timeout`` seconds."""
    found = host_port(url)
    if found is None:
        return False
    try:
        with socket.create_connection(found, timeout=timeout):
            return True
    except OSError:
        return False


def probe(urls: list[str], timeout: float = 0.3) -> dict[str, bool]:
    """:func:`listening` for each distinct URL, all at once: the whole probe takes about ``timeout`` at most."""
    asked = {url: submit(partial(listening, url, timeout), "rlm-probe") for url in dict.fromkeys(urls)}
    return {url: answer.result() for url, answer in asked.items()}


def start_hint(url: str, provider: str = "") -> str:
    """What to do when nothing listens at ``url``: the server's start command when known, or --base-url."""
    from rlm_host.price_keys import provider_key
    from rlm_host.models.catalog import START_COMMANDS  # each provider's record says how its server is started

    command = START_COMMANDS.get(provider_key(provider.partition(":")[0]), "")
    start = f"start it (`{command}`)" if command else "start the server"
    return f"{start}, or point --base-url at one that runs"
