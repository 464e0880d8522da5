"""The HTTP transport's guard (served on loopback hosts only: ``rlm mcp serve`` checks that): a bearer token on
every request, and a flag per request that is set when its client's connection closes (the SDK does not stop a tool
when an HTTP client goes away)."""

from __future__ import annotations

import hmac
import json
import threading
from typing import Any, Awaitable, Callable

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

#: The ASGI scope key holding a ``threading.Event`` set once the request's client disconnected.
DISCONNECTED_KEY = "rlm_mcp.disconnected"


class BearerGuard:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>``; marks each request's disconnect in its scope."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            await _unauthorized(send)
            return
        disconnected = threading.Event()
        scope = {**scope, DISCONNECTED_KEY: disconnected}

        async def watched_receive() -> dict[str, Any]:
            message = await receive()
            if message.get("type") == "http.disconnect":
                disconnected.set()
            return message

        await self.app(scope, watched_receive, send)


async def _unauthorized(send: Send) -> None:
    body = json.dumps({"error": "unauthorized", "error_description": "send Authorization: Bearer <token>"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="rlm-mcp"'),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
