"""Replay finished ``SpanRecord`` s through an OpenTelemetry SDK ``Tracer``, keeping their ids and times.

Some vendor SDKs (Langfuse, Logfire) only send what goes through their own ``TracerProvider``: their span
processors add vendor attributes and own the export. :func:`replay` starts and ends one SDK span per record,
parents first (``rlm_host.tree_order``), with the record's start and end times, kind, attributes, events and
status; the parent is given as an explicit context (never the thread's current one), so nothing global is
touched. The provider must be built with a :class:`ReplayIdGenerator`: while a record is replayed it hands out
that record's trace and span id, so the host's ids (``trace_id_for`` / ``span_id_for``) reach the backend::

    ids = ReplayIdGenerator()
    provider = TracerProvider(id_generator=ids)            # the SDK adds its processor to it
    replay(provider.get_tracer("rlm"), records, ids)

:class:`ReplaySink` is the ``rlm_host.Sink`` built on it: subclasses give the tracer and say how the SDK flushes
(and, optionally, what to do when a root run finishes, e.g. post scores).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Optional

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import NonRecordingSpan, Status, StatusCode

from rlm_host import RunEvent
from rlm_host.sdk.observability import SPAN_LIVE_EVENTS, ContentPolicy, SpanBuilder, SpanRecord, tree_order
from rlm_sink_otel.convert import span_context

__all__ = ["ReplayIdGenerator", "ReplaySink", "replay"]

logger = logging.getLogger("rlm.sinks")

_KINDS = {"internal": trace.SpanKind.INTERNAL, "client": trace.SpanKind.CLIENT}
#: Extra attributes for one record (a vendor's observation type, its trace name…), merged over the record's own.
Extra = Callable[[SpanRecord], Mapping[str, Any]]


class ReplayIdGenerator(IdGenerator):
    """Random ids (as the SDK's default), except for the span :func:`replay` is starting in this thread."""

    def __init__(self, fallback: Optional[IdGenerator] = None) -> None:
        self._fallback = fallback or RandomIdGenerator()
        self._next = threading.local()

    def generate_span_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[1] if ids else self._fallback.generate_span_id()

    def generate_trace_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[0] if ids else self._fallback.generate_trace_id()

    def use(self, record: Optional[SpanRecord]) -> None:
        """Hand out ``record``'s ids to the next span started in this thread (None: random ids again)."""
        self._next.ids = (int(record.trace_id, 16), int(record.span_id, 16)) if record is not None else None


def _parent_context(record: SpanRecord) -> Context:
    if not record.parent_span_id:
        return Context()  # a root: never the thread's current span
    parent = NonRecordingSpan(span_context(record.trace_id, record.parent_span_id))
    return trace.set_span_in_context(parent, Context())


def replay(tracer: trace.Tracer, records: Iterable[SpanRecord], ids: ReplayIdGenerator,
           extra: Optional[Extra] = None) -> int:
    """Replay ``records`` through ``tracer``; returns how many spans were sent.

    Every span is started parents first and ended children first, so the SDK's processors see each parent open
    while its children start, as with live spans. ``ids`` must be the id generator of ``tracer``'s provider
    (with another one, spans still go out, under the SDK's own ids)."""
    started = []
    for record in tree_order(records):
        attributes: dict[str, Any] = dict(record.attributes)
        if extra is not None:
            attributes.update({k: v for k, v in extra(record).items() if v is not None})
        ids.use(record)
        try:
            span = tracer.start_span(record.name, context=_parent_context(record), kind=_KINDS.get(record.kind,
                                     trace.SpanKind.INTERNAL), attributes=attributes,
                                     start_time=record.start_ns)
        finally:
            ids.use(None)
        for event in record.events:
            span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
        if record.status == "error":
            span.set_status(Status(StatusCode.ERROR, record.status_message or None))
        elif record.status == "ok":
            span.set_status(Status(StatusCode.OK))
        started.append((span, record))
    for span, record in reversed(started):
        span.end(end_time=max(record.end_ns, record.start_ns))
    return len(started)


class ReplaySink:
    """A ``rlm_host.Sink`` replaying each run tree through a vendor SDK's ``tracer`` when its root run ends.

    ``content`` is the sink's ``content_policy(settings)``: what run content the spans carry. Subclasses override
    :meth:`attributes` (vendor attributes per record), :meth:`root_finished` (called with the
    root ``invoke_agent`` record of each run tree) and :meth:`flush_backend` (deliver what the SDK holds within
    ``timeout`` seconds; return "" or why it failed). ``close`` ends open runs, then runs ``flush_backend`` in a
    daemon thread for at most ``flush_seconds``: a backend that is down costs one warning on ``rlm.sinks``, never
    an exception, never more than the deadline.
    """

    flush_seconds: float = 3.0
    live_events = SPAN_LIVE_EVENTS  # each model call is a span

    def __init__(self, tracer: trace.Tracer, ids: ReplayIdGenerator, *, name: str, content: ContentPolicy,
                 target: str = "", service_name: str = "rlm") -> None:
        self.tracer, self.ids = tracer, ids
        self.name, self.target = name, target
        self.builder = SpanBuilder(service_name, content=content)
        self.replayed = 0
        self._trees: dict[str, list[SpanRecord]] = {}  # trace id → the finished spans waiting for their root
        self._lock = threading.RLock()
        self._closed = False

    # ------------------------------------------------------------------ for subclasses

    def attributes(self, record: SpanRecord) -> Mapping[str, Any]:
        """Vendor attributes added to ``record``'s span (None values are left out)."""
        return {}

    def root_finished(self, root: SpanRecord) -> None:
        """A run tree's root run ended (its ``invoke_agent`` record has the result's ``rlm.*`` attributes)."""

    def flush_backend(self, timeout: float) -> str:
        """Deliver what the SDK still holds; "" when it went out, else why not."""
        return ""

    def shutdown_backend(self) -> None:
        """Release the SDK's resources after the last flush (called from the flush thread)."""

    # ------------------------------------------------------------------ the Sink protocol

    def handle(self, event: RunEvent) -> None:
        with self._lock:
            if self._closed:
                return
            self._send(self.builder.add(event))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._send(self.builder.finish(), final=True)
            except Exception as exc:  # noqa: BLE001 - never fail the run's end
                logger.warning("%s sink: could not replay the open runs: %s", self.name, exc)
        outcome: list[str] = []

        def flush() -> None:
            try:
                outcome.append(self.flush_backend(self.flush_seconds))
            except Exception as exc:  # noqa: BLE001
                outcome.append(f"{type(exc).__name__}: {exc}")
            try:
                self.shutdown_backend()
            except Exception:  # noqa: BLE001 - nothing left to deliver
                pass

        started = time.monotonic()
        worker = threading.Thread(target=flush, name=f"rlm-sink-{self.name}-flush", daemon=True)
        worker.start()
        worker.join(self.flush_seconds + 0.5)
        where = f" to {self.target}" if self.target else ""
        if not outcome:
            logger.warning("%s sink: delivery%s did not finish within %.1fs; %d span(s) may be lost",
                           self.name, where, time.monotonic() - started, self.replayed)
        elif outcome[0]:
            logger.warning("%s sink: could not deliver%s: %s", self.name, where, outcome[0])

    def _send(self, records: list[SpanRecord], final: bool = False) -> None:
        for record in records:
            self._trees.setdefault(record.trace_id, []).append(record)
            if record.parent_span_id is None:  # the root run ended: its whole tree is here
                self.replayed += replay(self.tracer, self._trees.pop(record.trace_id), self.ids, self.attributes)
                if record.operation == "invoke_agent":
                    self.root_finished(record)
        if final:
            for tree in self._trees.values():
                self.replayed += replay(self.tracer, tree, self.ids, self.attributes)
            self._trees.clear()
