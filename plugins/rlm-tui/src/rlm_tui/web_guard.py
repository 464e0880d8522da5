"""The door of ``rlm tui --web``: only the URL the command printed opens the app, as Jupyter's token does.

Every request must name this server in its ``Host`` (a page on a rebound domain names its own) and carry the
per-launch token: in the query of the first visit, which sets an HttpOnly, SameSite=Strict cookie and takes the
token out of the address bar, or in that cookie afterwards. The app's websocket must also come from the page
this server served (its ``Origin``). Anything else is a 403 before textual-serve starts an app process.
"""

from __future__ import annotations

import hmac
import sys
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Optional
from urllib.parse import urlsplit

from aiohttp import web
from rlm_host.sdk.commands import is_loopback_host, terminal_safe

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def url_host(address: str) -> str:
    """``address`` as it stands in a URL: an IPv6 address in brackets."""
    return f"[{address}]" if ":" in address else address


@dataclass(frozen=True)
class WebGuard:
    """The server's address and port as bound, and its token."""

    address: str
    port: int
    token: str

    @property
    def origin(self) -> str:
        """The origin of the pages this server serves (and of the only websocket it accepts)."""
        return f"http://{url_host(self.address)}:{self.port}"

    @property
    def cookie(self) -> str:
        """The cookie holding the token (one name per port: two servers on one machine keep their own)."""
        return f"rlm-tui-{self.port}"

    def names_this_server(self, host: Optional[str]) -> bool:
        """Whether a ``Host`` header names this server: the bound address and port, or for a loopback address any
        loopback name with the port (a rebound domain never passes: its name is not loopback)."""
        try:
            parts = urlsplit(f"//{host or ''}")
            hostname, port = parts.hostname or "", parts.port or 80
        except ValueError:
            return False
        if port != self.port:
            return False
        if is_loopback_host(self.address):
            return is_loopback_host(hostname)
        return hostname == self.address.strip("[]").lower()

    def is_canonical(self, host: Optional[str]) -> bool:
        return (host or "").lower() == f"{url_host(self.address)}:{self.port}".lower()

    def matches(self, given: Optional[str]) -> bool:
        """Whether ``given`` is the token (a comparison in constant time)."""
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


def refuse(request: web.Request, why: str) -> web.Response:
    """A 403 saying why; one line on the server's terminal too, so the user sees what was turned away."""
    line = terminal_safe(f"rlm tui: refused {request.method} {request.path}: {why}")  # the path is the page's text
    print(line, file=sys.stderr, flush=True)
    return web.Response(status=403, text=f"403 forbidden: {why}\n")


def middleware(guard: WebGuard) -> Any:
    """The aiohttp middleware putting ``guard`` in front of every route of textual-serve's application."""

    @web.middleware
    async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not guard.names_this_server(request.host):
            return refuse(request, f"Host {request.host!r} is not this server ({guard.origin})")
        websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if not websocket and not guard.is_canonical(request.host):  # the same server by another loopback name
            return web.Response(status=307, headers={"Location": f"{guard.origin}{request.rel_url}"})
        in_query = request.query.get("token")
        if in_query is not None and not guard.matches(in_query):
            return refuse(request, "wrong token: open the URL rlm tui --web printed")
        if in_query is None and not guard.matches(request.cookies.get(guard.cookie)):
            return refuse(request, "no token: open the URL rlm tui --web printed (it carries the token)")
        if websocket and request.headers.get("Origin") != guard.origin:
            return refuse(request, f"the app's websocket opens only from {guard.origin}, not from "
                                   f"{request.headers.get('Origin')!r}")
        if in_query is not None and not websocket:  # the first visit: the token moves into a cookie
            query = request.rel_url.query.copy()
            query.popall("token")
            location = f"{guard.origin}{request.rel_url.with_query(query)}"  # absolute: a path of // stays here
            response = web.Response(status=303, headers={"Location": location})
            response.set_cookie(guard.cookie, guard.token, httponly=True, samesite="Strict", path="/")
            return response
        return await handler(request)

    return guarded
