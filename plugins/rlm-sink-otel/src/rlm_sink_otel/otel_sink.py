"""``OtelSink``: the ``otel`` sink as the host sees it — the span export and the metrics, fed the same events.

The spans go to a :class:`SpanExportSink`, the metrics to :class:`RunMetrics`. ``live_events`` is the union of
what both want (the host delivers the recorded events plus those live types, or every live event to a sink that
says ``True``); each part gets only the live events it asked for. The span sink goes first, so its warning about
a backend that is down is the one given. Other attributes (``exported``, ``dropped``, ``failures``…) are the span
sink's. ``close`` closes both and never raises.
"""

from __future__ import annotations

import logging
from typing import Any, Optional, Union

from rlm_host import RunEvent

logger = logging.getLogger("rlm.sinks")

#: The host's live event types (in progress; a sink gets them only when it asks through ``live_events``).
LIVE_EVENT_TYPES = frozenset({"step_start", "model_call_start", "model_call_end", "code_start", "code_end",
                              "sub_call_start", "child_run_start", "child_run_end"})


def _wanted(live: Any) -> Union[bool, frozenset[str]]:
    """A sink's ``live_events`` as True (every live event) or the set of live types it asked for."""
    if live is True or (live and not isinstance(live, (set, frozenset, list, tuple))):
        return True
    return frozenset(live or ())


class OtelSink:
    """A ``rlm_host.Sink`` forwarding to ``spans`` (a :class:`SpanExportSink`) and ``metrics`` (a
    :class:`RunMetrics`, or None when ``[sink.otel] metrics`` is off)."""

    def __init__(self, spans: Any, metrics: Optional[Any] = None, *, name: str = "otel") -> None:
        self.spans, self.metrics, self.name = spans, metrics, name
        self._span_live = _wanted(getattr(spans, "live_events", False))
        metric_live = _wanted(getattr(metrics, "live_events", False)) if metrics is not None else frozenset()
        if self._span_live is True or metric_live is True:
            self.live_events: Union[bool, frozenset[str]] = True
        else:
            self.live_events = (self._span_live | metric_live) or False  # type: ignore[operator]
        self._metric_live = metric_live
        self._metrics_broken = False

    def __getattr__(self, name: str) -> Any:
        if name in ("spans", "metrics"):  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.spans, name)

    def handle(self, event: RunEvent) -> None:
        live = event.type in LIVE_EVENT_TYPES
        try:
            if not live or self._span_live is True or event.type in self._span_live:  # type: ignore[operator]
                self.spans.handle(event)
        finally:
            if self.metrics is not None and not self._metrics_broken and (
                    not live or self._metric_live is True or event.type in self._metric_live):  # type: ignore[operator]
                self._guarded(lambda: self.metrics.handle(event), f"a {event.type} event")

    def flush(self) -> bool:
        """The span sink's flush (metrics go out when a root run finishes and at close)."""
        flush = getattr(self.spans, "flush", None)
        return bool(flush()) if callable(flush) else True

    def close(self) -> None:
        """Close the span sink, then the metrics. Idempotent, never raises."""
        try:
            self.spans.close()
        except Exception as exc:  # noqa: BLE001 - a backend problem must not end the run badly
            logger.warning("%s sink: closing the span export failed: %s", self.name, exc)
        finally:
            if self.metrics is not None:
                self._guarded(self.metrics.close, "closing")

    def _guarded(self, call: Any, what: str) -> None:
        """Metrics must never cost the spans: an error there is one warning and ends the metrics only."""
        try:
            call()
        except Exception as exc:  # noqa: BLE001
            if not self._metrics_broken:
                self._metrics_broken = True
                logger.warning("%s sink: metrics stopped after %s while handling %s", self.name,
                               f"{type(exc).__name__}: {exc}", what)
