"""Delivering run events to sinks without ever slowing a run down or breaking it.

Each sink gets a :class:`SinkWorker`: a bounded queue and a thread of its own that calls ``handle`` (so a sink
may block on a remote backend), and the sink's optional ``flush()`` whenever it has caught up with the queue (so
a sink that buffers in ``handle`` and sends in ``flush`` batches by itself: one request per step on a fast
backend, everything that piled up in one request on a slow one). Emitting an event costs the run one ``put_nowait``. A sink that raises, falls
``queue_size`` events behind, or leaves one call running longer than ``call_seconds`` is disabled for the rest of
the run: one warning, and a ``sink_error`` event in the trajectory. Sinks get the recorded events; the live ones
(``rlm_host.event_types``) only when the sink sets ``live_events = True``. At the end of the run tree,
:class:`SinkDelivery` closes every sink at once and waits for them together until one deadline; what a sink has
not delivered by then is dropped with a warning, and the run returns.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Optional

from rlm_host import logs
from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.events import EVENT_TYPES, EventBus, RunEvent, Sink

#: Events a sink may fall behind before it is disabled (a run emits a few per step).
QUEUE_SIZE = 10_000

#: What a sink receives unless it sets ``live_events = True``: the recorded events, not the live ones (what is in
#: progress: a sink exports what happened; a UI that wants the calls in progress subscribes to them).
RECORDED_EVENT_TYPES: frozenset[str] = EVENT_TYPES - LIVE_EVENT_TYPES

_CLOSE = object()


def wanted_by(sink: Sink) -> Optional[frozenset[str]]:
    """The event types a sink gets: the recorded ones, plus its ``live_events`` (True: every live event; a set of
    names: those, e.g. ``model_call_end`` for a span tree's model calls); None means every type."""
    live = getattr(sink, "live_events", False)
    if live is True:
        return None
    if not live:
        return RECORDED_EVENT_TYPES
    return RECORDED_EVENT_TYPES | (frozenset([live]) if isinstance(live, str) else frozenset(live))


class SinkWorker:
    """One sink fed from its own thread; ``submit`` is the bus subscriber and never blocks."""

    def __init__(self, name: str, sink: Sink, on_disabled: Callable[[str, str, Optional[RunEvent]], None], *,
                 queue_size: int = QUEUE_SIZE, call_seconds: float = 30.0) -> None:  # fmt: skip
        self.name = name
        self.sink = sink
        self.disabled: Optional[str] = None
        self._on_disabled = on_disabled
        self._call_seconds = call_seconds
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._busy_since: Optional[float] = None
        self._last_event: Optional[RunEvent] = None
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._closing = False
        self._idle: Optional[Callable[[], None]] = getattr(sink, "flush", None)
        self._thread = threading.Thread(target=self._work, name=f"rlm-sink-{name}", daemon=True)
        self._thread.start()

    def submit(self, event: RunEvent) -> None:
        if self.disabled is not None or self._closing:
            return
        self._last_event = event
        busy = self._busy_since
        if busy is not None and time.monotonic() - busy > self._call_seconds:
            self.disable(f"one call has not returned after {self._call_seconds:g} s", event)
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.disable(f"it fell {self._queue.maxsize} events behind", event)

    def disable(self, reason: str, event: Optional[RunEvent] = None) -> None:
        """Stop feeding the sink (once); its queued events are dropped."""
        with self._lock:
            if self.disabled is not None:
                return
            self.disabled = reason
        self._drain()
        self._on_disabled(self.name, reason, event or self._last_event)

    def close(self) -> None:
        """Ask the worker to deliver what is queued, then close the sink (see :meth:`wait`)."""
        self._closing = True
        try:
            self._queue.put_nowait(_CLOSE)  # wakes the worker at once; when full, it sees ``_closing`` on its own
        except queue.Full:
            pass

    def wait(self, seconds: float) -> bool:
        """Whether the sink finished (delivered and closed) within ``seconds``."""
        return self._done.wait(max(0.0, seconds))

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    @property
    def pending(self) -> int:
        return self._queue.qsize()

    def _drain(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def _work(self) -> None:
        try:
            while True:
                try:
                    item = self._queue.get(timeout=0.1)
                except queue.Empty:
                    if self._closing:
                        break
                    continue
                if item is _CLOSE:
                    if self._queue.empty():
                        break
                    continue
                if self.disabled is None:
                    self._call(lambda: self.sink.handle(item), item)
                    if self._idle is not None and self._queue.empty() and self.disabled is None:
                        self._call(self._idle, item)  # caught up: a batching sink sends what it holds
            self._call(self.sink.close, None)
        finally:
            self._done.set()

    def _call(self, call: Callable[[], None], event: Optional[RunEvent]) -> None:
        self._busy_since = time.monotonic()
        try:
            call()
        except Exception as exc:  # a failing sink must never break the run
            what = "closing" if event is None else f"a {event.type} event"
            self.disable(f"{type(exc).__name__} while handling {what}: {exc}", event)
        finally:
            self._busy_since = None


class SinkDelivery:
    """The sinks of one run tree on its event bus; :meth:`close` flushes them all within one deadline."""

    def __init__(self, bus: EventBus, sinks: list[tuple[str, Sink]], *, flush_seconds: float = 10.0,
                 call_seconds: float = 30.0, queue_size: int = QUEUE_SIZE) -> None:  # fmt: skip
        self._bus = bus
        self._flush_seconds = flush_seconds
        self._closed = False
        self.workers = [SinkWorker(name, sink, self._disabled, queue_size=queue_size, call_seconds=call_seconds)
                        for name, sink in sinks]  # fmt: skip
        for worker in self.workers:
            bus.subscribe(f"sink {worker.name}", worker.submit, wanted_by(worker.sink))

    def close(self) -> None:
        """Close every sink, waiting at most ``flush_seconds`` for all of them together."""
        for worker in self.workers:
            worker.close()
        deadline = time.monotonic() + self._flush_seconds
        try:
            for worker in self.workers:
                if not worker.wait(deadline - time.monotonic()) and worker.disabled is None:
                    worker.disable(f"it did not deliver within {self._flush_seconds:g} s of the run's end "
                                   f"({worker.pending} events dropped)")  # fmt: skip
        except KeyboardInterrupt:  # Ctrl-C while the sinks flush: stop waiting, keep the run's result
            for worker in self.workers:
                if not worker.finished and worker.disabled is None:
                    worker.disable(f"interrupted (Ctrl-C) before it delivered ({worker.pending} events dropped)")
        self._closed = True

    def _disabled(self, name: str, reason: str, event: Optional[RunEvent]) -> None:
        logs.get_logger("rlm.sinks").warning(f"sink {name} disabled for this run: {reason}", sink=name, error=reason)
        if event is None or self._closed:
            return  # nothing to attach it to, or the trajectory is closed: the warning said it
        self._bus.emit(RunEvent(type="sink_error", run_id=event.run_id, root_run_id=event.root_run_id,
                                parent_run_id=event.parent_run_id, depth=event.depth,
                                data={"sink": name, "error": reason}))  # fmt: skip
