"""Delivering run events to sinks without ever slowing a run down or breaking it.

Each sink gets a :class:`SinkWorker`: a bounded queue and a thread of its own that calls ``handle`` (so a sink may block
on a remote backend), and the sink's optional ``flush()`` whenever it has caught up with the queue (so a sink that
buffers in ``handle`` and sends in ``flush`` batches by itself: one request per step on a fast backend, everything that
piled up in one request on a slow one). Emitting an event costs the run one ``put_nowait``. A sink that raises, falls
``queue_size`` events behind, or leaves one call running longer than ``call_seconds`` is disabled for the rest of the
run: one warning, and a ``sink_error`` event in the trajectory. Sinks get the recorded events; the live ones
(``rlm_host.event_types``) only when the sink sets ``live_events`` (True, or the names it wants). At the end of the run
tree, :class:`SinkDelivery` closes every sink at once and waits for them together until one deadline; what a sink has
not delivered by then is dropped with a warning. The run itself does not wait: it returns its answer while
:meth:`SinkDelivery.close_in_background` delivers, and :func:`wait_for_sinks` (the CLI after printing the answer, the
process at exit) waits for that.
"""

from __future__ import annotations

import contextlib
import functools
import queue
import threading
import time
from concurrent import futures
from typing import Callable, Optional, Sequence, Union, cast

from rlm_host import logs
from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.events import EVENT_TYPES, EventBus, RunEvent, Sink
from rlm_host.process_state import register
from rlm_host.threads import run_in_thread, submit

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
    return None if live is True else RECORDED_EVENT_TYPES | frozenset([live] if isinstance(live, str) else live or ())


SinkStarter = Callable[[], Sink]
_starting = threading.Lock()


class SinkWorker:
    """One sink fed from its own thread; ``submit`` is the bus subscriber and never blocks.

    ``sink`` may be a :data:`SinkStarter` (a call that makes the sink): the worker's thread then makes it, so a
    vendor SDK's import and connection set-up (0.3–0.7 s for some) happen beside the run, not before its first
    step; the events sent meanwhile wait in the queue. One that cannot start is disabled like a failing sink."""

    def __init__(self, name: str, sink: Union[Sink, SinkStarter],
                 on_disabled: Callable[[str, str, Optional[RunEvent]], None], *,
                 queue_size: int = QUEUE_SIZE, call_seconds: float = 30.0) -> None:
        self.name = name
        # a sink given made (tests; a run gives starters) is "made" by the worker like the others, at once
        self._start = cast(SinkStarter, (lambda: sink) if hasattr(sink, "handle") else sink)
        self.sink: Optional[Sink] = None
        # what the sink takes: known once it exists (until then every event waits in the queue)
        self.wanted: Optional[frozenset[str]] = None
        self.disabled: Optional[str] = None
        self._busy_since: Optional[float] = None
        self._last_event: Optional[RunEvent] = None
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._on_disabled, self._call_seconds, self._unreported, self._closing = on_disabled, call_seconds, "", False
        self._lock, self._done = threading.Lock(), threading.Event()
        run_in_thread(self._work, f"rlm-sink-{name}")  # not submit: the sink's code never runs in the run's context

    def submit(self, event: RunEvent) -> None:
        wanted = self.wanted
        if self.disabled is not None or self._closing or (wanted is not None and event.type not in wanted):
            if self._unreported and self.disabled is not None:  # a sink that could not start, told with this event
                reason, self._unreported = self._unreported, ""
                self._on_disabled(self.name, reason, event)
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
        with contextlib.suppress(queue.Empty):  # its queued events are dropped
            while True:
                self._queue.get_nowait()
        if event is None and self._last_event is None:  # no run event seen yet: reported with the first one
            self._unreported = reason
            return
        self._on_disabled(self.name, reason, event or self._last_event)

    def close(self) -> None:
        """Ask the worker to deliver what is queued, then close the sink (see :meth:`wait`)."""
        self._closing = True
        with contextlib.suppress(queue.Full):  # when full, the worker sees ``_closing`` on its own
            self._queue.put_nowait(_CLOSE)  # wakes the worker at once

    def wait(self, seconds: float) -> bool:
        """Whether the sink finished (delivered and closed) within ``seconds``."""
        return self._done.wait(max(0.0, seconds))

    def _work(self) -> None:
        try:
            self._make_sink()
            if self.sink is None:
                return  # it could not start: disabled
            flush: Optional[Callable[[], None]] = getattr(self.sink, "flush", None)
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
                elif self.disabled is None and (self.wanted is None or item.type in self.wanted):
                    self._call(functools.partial(self.sink.handle, item), item)  # called at once
                    if flush is not None and self._queue.empty() and self.disabled is None:
                        self._call(flush, item)  # caught up: a batching sink sends what it holds
            self._call(self.sink.close, None)
        finally:
            self._done.set()

    def _make_sink(self) -> None:
        self._busy_since = time.monotonic()
        try:
            with _starting:  # one sink made at a time: fewer threads importing at once leave the run its share
                sink = self._start()  # of the interpreter
        except Exception as exc:  # a sink that cannot start must never break the run
            self.disable(f"not started: {type(exc).__name__}: {exc}")
            return
        finally:
            self._busy_since = None
        self.sink = sink
        self.wanted = wanted_by(sink)

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
    """The sinks of one run tree on its event bus; :meth:`close` flushes them all within one deadline, and
    :meth:`close_in_background` does so from a thread of its own so the run's answer is not kept waiting."""

    def __init__(self, bus: EventBus, sinks: Sequence[tuple[str, Union[Sink, SinkStarter]]], *,
                 flush_seconds: float = 10.0, call_seconds: float = 30.0) -> None:
        self._bus, self._flush_seconds, self._closed = bus, flush_seconds, False
        self.workers = [SinkWorker(name, sink, self._disabled, call_seconds=call_seconds) for name, sink in sinks]
        for worker in self.workers:  # a sink still starting takes every event; its worker filters them
            bus.subscribe(f"sink {worker.name}", worker.submit)

    def close(self) -> None:
        """Close every sink, waiting at most ``flush_seconds`` for all of them together."""
        for worker in self.workers:
            worker.close()
        deadline = time.monotonic() + self._flush_seconds
        why = f"it did not deliver within {self._flush_seconds:g} s of the run's end"
        try:
            for worker in self.workers:
                worker.wait(deadline - time.monotonic())
        except KeyboardInterrupt:  # Ctrl-C while the sinks flush: stop waiting, keep the run's result
            why = "interrupted (Ctrl-C) before it delivered"
        for worker in self.workers:
            if not worker._done.is_set() and worker.disabled is None:
                worker.disable(f"{why} ({worker._queue.qsize()} events dropped)")
        self._closed = True

    def close_in_background(self) -> None:
        """Start :meth:`close` in a thread and return at once; :func:`wait_for_sinks` (called by the CLI after it
        printed the answer, and at the process's exit) waits for it. A sink disabled from now on is reported by
        its warning alone: the trajectory is closed while the sinks still deliver."""
        self._closed = True
        if not self.workers:
            return
        # at exit, wait for them: registered now, after the sinks' libraries registered their own exit handlers,
        # so that this runs before those do
        register("sink delivery", at_exit=wait_for_sinks)
        delivered = submit(self.close, "rlm-sink-delivery")  # no sink code runs here: only waits and warnings
        with _pending_lock:  # a long-lived process (a server, chat) keeps only the deliveries still going
            _pending[:] = [d for d in _pending if not d.done()]
            _pending.append(delivered)

    def _disabled(self, name: str, reason: str, event: Optional[RunEvent]) -> None:
        logs.get_logger("rlm.sinks").warning(f"sink {name} disabled for this run: {reason}", sink=name, error=reason)
        if event is None or self._closed:
            return  # nothing to attach it to, or the trajectory is closed: the warning said it
        self._bus.emit(RunEvent(type="sink_error", run_id=event.run_id, root_run_id=event.root_run_id,
                                parent_run_id=event.parent_run_id, depth=event.depth,
                                data={"sink": name, "error": reason}))


_pending: list[futures.Future] = []  # one per delivery in flight, done once it is
_pending_lock = threading.Lock()


def wait_for_sinks(timeout: Optional[float] = None) -> bool:
    """Wait until every run's sinks of this process have delivered (each within its own ``sink_flush_seconds``
    deadline, counted from its run's end), or ``timeout`` seconds; True when nothing is left in flight.

    The CLI calls it after printing the answer, and the process calls it at exit, so a script using ``RLM`` gets
    its result at once and still delivers; call it yourself before reading what a sink wrote. Ctrl-C stops the
    wait: what the sinks had not delivered is dropped, one warning each."""
    with _pending_lock:
        deliveries = list(_pending)
    try:
        futures.wait(deliveries, timeout)
    except KeyboardInterrupt:  # the delivery threads stop waiting on their own (see SinkDelivery.close)
        logs.get_logger("rlm.sinks").warning("stopped waiting for the sinks (Ctrl-C): what they had not "
                                             "delivered is dropped")
        return False
    with _pending_lock:
        _pending[:] = [d for d in _pending if not d.done()]
        return not _pending


def _after_fork_in_child() -> None:
    global _starting, _pending, _pending_lock
    _starting, _pending, _pending_lock = threading.Lock(), [], threading.Lock()  # the parent's deliveries are its own


register("sink delivery", after_fork_in_child=_after_fork_in_child)
