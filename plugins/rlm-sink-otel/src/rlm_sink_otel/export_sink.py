"""``SpanExportSink``: the sink base every OpenTelemetry-shaped sink shares (OTLP, Langfuse, Logfire, LangSmith…).

It feeds events to the host's ``SpanBuilder``, converts finished spans with :func:`to_readable_span` and hands
batches to any OpenTelemetry SDK ``SpanExporter``. The host calls ``handle`` from a background worker, so an export
may block, and calls the sink's ``flush()`` whenever that worker has caught up with the run's events: spans go
out then (one request per step on a fast backend, all that piled up in one request on a slow one), and also
when a root run finishes, when ``batch_size`` spans wait, or ``flush_interval`` seconds after the last export.

A backend failure never raises: the first one is logged as one warning on ``rlm.sinks`` (the exporter's own
log lines are folded into it), the spans wait (up to ``max_pending``) and export is retried after ``retry_after``
seconds. ``close`` ends the runs left open, exports what waits and shuts the exporter down.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Optional

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from rlm_host import RunEvent
from rlm_host.sdk.observability import SPAN_LIVE_EVENTS, ContentPolicy, SpanBuilder, SpanRecord
from rlm_sink_otel.convert import make_resource, make_scope, to_readable_span
from rlm_sink_otel.folded_logs import OTLP_EXPORTER_LOGGERS, explained_export

logger = logging.getLogger("rlm.sinks")


class SpanExportSink:
    """A ``rlm_host.Sink`` exporting the run trees' spans through ``exporter``.

    ``name`` and ``target`` (where the spans go, e.g. the endpoint) only appear in log lines; ``probe`` (see
    :func:`tcp_probe`) is tried before the first export and before each retry, so a backend that is down costs
    a connection attempt, not the exporter's retries with back-off; an exporter with a
    ``last_problem()`` method (see :func:`otlp_http_exporter`) explains its failures in them. ``content`` is the
    sink's ``content_policy(settings)``: what run content the spans carry. Subclasses may override :meth:`to_span`
    to add vendor attributes. Counters: ``exported``, ``dropped``, ``failures``.
    """

    batch_size: int = 256
    flush_interval: float = 5.0
    retry_after: float = 30.0
    max_pending: int = 10_000

    live_events = SPAN_LIVE_EVENTS  # each model call is a span

    def __init__(self, exporter: SpanExporter, resource: Optional[Resource] = None, *, content: ContentPolicy,
                 service_name: str = "rlm", scope: Optional[InstrumentationScope] = None, name: str = "otel",
                 target: str = "", probe: Optional[Callable[[], Optional[str]]] = None) -> None:
        self.exporter = exporter
        self.probe = probe  # a quick reachability test before the first export and each retry: a problem or None
        self.resource = resource if resource is not None else make_resource(service_name)
        self.scope = scope or make_scope()
        self.builder = SpanBuilder(service_name, content=content)
        self.name, self.target = name, target
        self.exported = self.dropped = self.failures = 0
        self._pending: list[ReadableSpan] = []
        self._lock = threading.RLock()
        self._closed = False
        self._last_export = time.monotonic()
        self._down_until = 0.0

    # ------------------------------------------------------------------ the Sink protocol

    def handle(self, event: RunEvent) -> None:
        """Add ``event`` to the span tree; export when a root run finished or a batch is full or due."""
        with self._lock:
            if self._closed:
                return
            records = self.builder.add(event)
            self._pending.extend(self.to_span(record) for record in records)
            root_done = event.type == "final" and not event.parent_run_id
            due = time.monotonic() - self._last_export >= self.flush_interval
            if self._pending and (root_done or due or len(self._pending) >= self.batch_size):
                self.flush()

    def close(self) -> None:
        """End open runs (as errors), export every waiting span, shut the exporter down. Idempotent, never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._pending.extend(self.to_span(record) for record in self.builder.finish())
                self.flush(final=True)
            finally:
                try:
                    self.exporter.shutdown()
                except Exception as exc:  # noqa: BLE001 - a backend problem must not end the run badly
                    logger.warning("%s sink: shutting the exporter down failed: %s", self.name, exc)
                if self.dropped:
                    logger.info("%s sink: %d span(s) were not delivered%s", self.name, self.dropped, self._to())

    # ------------------------------------------------------------------ for subclasses

    def to_span(self, record: SpanRecord) -> ReadableSpan:
        """The SDK span of one record (override to add attributes a vendor reads)."""
        return to_readable_span(record, self.resource, self.scope)

    def flush(self, final: bool = False) -> bool:
        """Export the waiting spans now (unless the backend failed less than ``retry_after`` seconds ago);
        True when nothing is left waiting. The host calls it whenever its worker is idle."""
        with self._lock:
            if not self._pending:
                return True
            if time.monotonic() < self._down_until:
                if final:  # the backend is down: do not spend the host's close deadline on it
                    self.dropped += len(self._pending)
                    self._pending.clear()
                return False
            batch, self._pending = self._pending, []
            self._last_export = time.monotonic()
            # an exporter retries a refused connection with back-off for its whole timeout: a probe fails at once
            problem = self.probe() if self.probe is not None and (self.failures or not self.exported) else None
            ok, reason = (False, problem) if problem else self._export(batch)
            if ok:
                self.exported += len(batch)
                return True
            self.failures += 1
            self._down_until = time.monotonic() + self.retry_after
            if final:
                self.dropped += len(batch)
            else:
                self._pending = batch + self._pending
                overflow = len(self._pending) - self.max_pending
                if overflow > 0:
                    self.dropped += overflow
                    del self._pending[:overflow]
            if self.failures == 1:
                logger.warning("%s sink: could not export %d span(s)%s: %s (later failures are not reported; "
                               "retrying every %gs)", self.name, len(batch), self._to(), reason,
                               self.retry_after)
            return False

    # ------------------------------------------------------------------ internals

    def _to(self) -> str:
        return f" to {self.target}" if self.target else ""

    def _export(self, batch: Sequence[ReadableSpan]) -> tuple[bool, str]:
        return explained_export(self.exporter, lambda: self.exporter.export(batch), SpanExportResult.SUCCESS,
                                *OTLP_EXPORTER_LOGGERS)


def tcp_probe(host: str, port: int, timeout: float = 1.0) -> Callable[[], Optional[str]]:
    """A probe for :class:`SpanExportSink`: None when ``host:port`` accepts a TCP connection within ``timeout``."""
    import socket

    def probe() -> Optional[str]:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            return None
        except OSError as exc:
            return f"{host}:{port} unreachable ({exc.strerror or type(exc).__name__})"

    return probe
