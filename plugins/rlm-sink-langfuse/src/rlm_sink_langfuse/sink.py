"""The ``langfuse`` sink: the span tree replayed through the Langfuse SDK's OpenTelemetry pipeline, plus scores.

The SDK (v4) is OpenTelemetry-based: ``Langfuse(tracer_provider=…)`` adds its ``LangfuseSpanProcessor`` (batching,
filtering, media handling, export to ``<base_url>/api/public/otel/v1/traces``) to a provider of ours, so nothing
global is set. Our finished spans are replayed through that provider (``rlm_sink_otel.replay``) with their own
ids and times, so the Langfuse trace id is ``rlm_host.trace_id_for(root run id)``. When a root run ends, the
``reward`` and ``completed`` scores go through ``Langfuse.create_score`` (the SDK's score queue, posted to
``/api/public/ingestion`` by SDK v4, ``/api/public/scores`` by v5).

The SDK keeps ONE resource manager per public key for the whole process (later clients with that key reuse the
first one's endpoint and processor, and it registers an ``atexit`` flush). So this module keeps one client per
public key too, reused by every run, never shut down by a run; ``close`` only flushes, in a thread, with a deadline.
"""

from __future__ import annotations

import base64
import logging
import math
import threading
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from opentelemetry.sdk.trace import TracerProvider

from rlm_host import Readiness
from rlm_host.sdk.observability import SpanRecord, content_policy
from rlm_sink_langfuse.mapping import langfuse_attributes
from rlm_sink_langfuse.settings import LangfuseSinkSettings
from rlm_sink_otel.convert import make_resource, make_scope
from rlm_sink_otel.export_sink import tcp_probe
from rlm_sink_otel.folded_logs import OTLP_EXPORTER_LOGGERS, FoldedLogs
from rlm_sink_otel.http_exporter import otlp_http_exporter
from rlm_sink_otel.replay import ReplayIdGenerator, ReplaySink

logger = logging.getLogger("rlm.sinks")
OTEL_PATH = "/api/public/otel/v1/traces"
CONNECT_TIMEOUT = 1.5


@dataclass
class _Client:
    """One Langfuse client per public key, as the SDK allows, with the provider and exporter behind it."""

    client: Any
    provider: TracerProvider
    ids: ReplayIdGenerator
    exporter: Any
    base_url: str


_clients: dict[str, _Client] = {}
_clients_lock = threading.Lock()


def _client_for(settings: LangfuseSinkSettings) -> _Client:
    from rlm_sink_langfuse.sdk import Langfuse

    public, secret, base = settings.resolved()
    with _clients_lock:
        known = _clients.get(public)
        if known is not None:
            if known.base_url != base:
                logger.warning("langfuse sink: this public key is already in use with %s in this process; the "
                               "Langfuse SDK keeps one client per key, so spans still go there", known.base_url)
            return known
        ids = ReplayIdGenerator()
        resource = {"langfuse.environment": settings.environment} if settings.environment else {}
        provider = TracerProvider(resource=make_resource(settings.service_name, resource), id_generator=ids)
        auth = base64.b64encode(f"{public}:{secret}".encode()).decode("ascii")
        # the SDK's own exporter logs failures only; this one (same endpoint and headers) can also say why
        exporter = otlp_http_exporter(base + OTEL_PATH, {"Authorization": f"Basic {auth}",
                                      "x-langfuse-public-key": public, "x-langfuse-sdk-name": "python"},
                                      timeout=settings.timeout)
        client = Langfuse(public_key=public, secret_key=secret, base_url=base, environment=settings.environment,
                          timeout=max(1, math.ceil(settings.timeout)), flush_interval=0.5, tracer_provider=provider,
                          span_exporter=exporter, should_export_span=lambda span: True)
        _clients[public] = _Client(client, provider, ids, exporter, base)
        return _clients[public]


class LangfuseSink(ReplaySink):
    """Replays each finished span with Langfuse attributes; scores each finished run tree."""

    def __init__(self, settings: LangfuseSinkSettings) -> None:
        # the SDK's and its exporter's warnings (background threads) become the sink's one warning at close
        self.folded = FoldedLogs("langfuse", *OTLP_EXPORTER_LOGGERS).start()
        self.scores: list[dict[str, Any]] = []
        self.langfuse = _client_for(settings)
        scope = make_scope()
        super().__init__(self.langfuse.provider.get_tracer(scope.name, scope.version), self.langfuse.ids,
                         name="langfuse", target=self.langfuse.base_url, service_name=settings.service_name,
                         content=content_policy(settings))
        self.flush_seconds = settings.flush_seconds

    def attributes(self, record: SpanRecord) -> dict[str, Any]:
        return langfuse_attributes(record)

    def root_finished(self, root: SpanRecord) -> None:
        """The tree's scores, posted by :meth:`flush_backend` once its spans went out."""
        attrs = root.attributes
        reward = attrs.get("rlm.total_reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            self.scores.append(dict(name="reward", value=float(reward), trace_id=root.trace_id, data_type="NUMERIC",
                                    score_id=f"{root.trace_id}-reward"))
        self.scores.append(dict(name="completed", value=1.0 if attrs.get("rlm.completed") is True else 0.0,
                                trace_id=root.trace_id, data_type="BOOLEAN", score_id=f"{root.trace_id}-completed",
                                comment=str(attrs.get("rlm.termination_reason") or "") or None))

    def flush_backend(self, timeout: float) -> str:
        """The spans first (bounded by the exporter's timeout); the scores only if the spans went out (a server
        that is down gets no score posts: the SDK would log each failure from its own thread)."""
        explain = getattr(self.langfuse.exporter, "last_problem", lambda: "")
        try:
            self.langfuse.provider.force_flush(int(timeout * 1000))
            if not explain() and not self.folded.lines:
                for score in self.scores:
                    self.langfuse.client.create_score(**score)
                self.langfuse.client.flush()  # the score queue (and the spans again: nothing left)
        finally:
            self.folded.stop()
        return explain() or (self.folded.summary() or "")


def create(settings: Optional[LangfuseSinkSettings], services: Any) -> LangfuseSink:
    """The sink factory: needs a public and a secret key (settings or LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY)."""
    settings = settings or LangfuseSinkSettings()
    missing = settings.missing()
    if missing:
        raise RuntimeError(f"Langfuse credentials missing: set {' and '.join(missing)} "
                           "(or [sink.langfuse] public_key / secret_key)")
    return LangfuseSink(settings)


def check(settings: Optional[LangfuseSinkSettings]) -> Readiness:
    """For ``rlm plugins doctor``: credentials present (names only) and the server reachable."""
    settings = settings or LangfuseSinkSettings()
    _, _, base = settings.resolved()
    missing = settings.missing()
    if missing:
        return Readiness(False, f"{', '.join(missing)} not set (server {base})",
                         "export them, or set [sink.langfuse] public_key / secret_key")
    parts = urlsplit(base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    problem = tcp_probe(parts.hostname or "localhost", port, CONNECT_TIMEOUT)()
    if problem:
        return Readiness(False, f"keys set; {base} unreachable: {problem}",
                         "set [sink.langfuse] base_url or LANGFUSE_BASE_URL to a reachable Langfuse "
                         "server")
    return Readiness(True, f"keys set; {base} reachable")
