"""``otlp_http_exporter``: the SDK's OTLP/HTTP exporter, able to say why its last export failed.

The SDK's exporter logs only "Failed to export span batch due to timeout, max retries or shutdown." when a
retryable failure (HTTP 5xx, a refused connection) outlives its timeout. The session given to it here keeps the
last problem (``HTTP 500 Internal Server Error: <body>``, ``ConnectionError: [Errno 111] Connection refused``,
redacted before it is cut: a body may echo the token sent), and the exporter carries ``last_problem()``, which
:class:`SpanExportSink` puts in its warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

import requests
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from rlm_host.sdk.observability import redacted_clip

_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")]*")


class _ExplainingSession(requests.Session):
    """A ``requests.Session`` remembering the last failed request (cleared by a successful one)."""

    last_problem = ""

    def request(self, method: Any, url: Any, *args: Any, **kwargs: Any) -> requests.Response:
        # every verb goes through request(): OTel ≤ 1.44 calls post(), 1.45 request() directly
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as exc:
            found = _ERRNO.search(str(exc))
            cause = found.group(0).strip() if found else redacted_clip(str(exc), 200, "ellipsis")
            self.last_problem = f"{type(exc).__name__}: {cause}"
            raise
        if response.ok:
            self.last_problem = ""
        else:
            body = redacted_clip(response.text or "", 200, "ellipsis", one_line=True)  # it may echo a credential
            self.last_problem = f"HTTP {response.status_code} {response.reason}" + (f": {body}" if body else "")
        return response


def otlp_http_exporter(endpoint: str, headers: Optional[Mapping[str, str]] = None, timeout: float = 10.0,
                       compression: Optional[Compression] = None) -> OTLPSpanExporter:
    """An OTLP/HTTP protobuf ``SpanExporter`` posting to ``endpoint`` (the full URL, ``…/v1/traces``) with
    ``headers``; its ``last_problem()`` says why the last export failed ("" after a success)."""
    session = _ExplainingSession()
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}), timeout=timeout,
                                compression=compression, session=session)
    exporter.last_problem = lambda: session.last_problem  # type: ignore[attr-defined]
    return exporter
