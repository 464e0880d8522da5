"""``RunMetrics``: rlm run trees as OpenTelemetry metrics — runs, steps, reward, duration, tokens and cost.

Instruments (scope ``rlm``; model names without the ``provider:`` prefix, the provider in
``gen_ai.provider.name``; ``rlm.label.<key>`` for each ``[run] labels`` entry on every instrument):

- ``rlm.runs`` (counter, ``{run}``) and the histograms ``rlm.reward`` (a run's total reward) and
  ``rlm.run_duration`` (``s``), one measurement per run — the root run and each child run, told apart by
  ``rlm.depth`` (0 for the root) — at its ``final`` event: ``rlm.environment``, ``rlm.framework``,
  ``gen_ai.request.model``, ``gen_ai.provider.name``, ``rlm.depth``, ``rlm.completed``, ``rlm.termination_reason``.
  A run still open at close counts as not completed, ``rlm.termination_reason`` ``unfinished``.
- ``rlm.steps`` (counter, ``{step}``): one per ``step`` event, with the run's attributes and ``rlm.action``.
- Per model call (root turns, sub-calls, compactions; each once): ``gen_ai.client.token.usage`` (histogram,
  ``{token}``, ``gen_ai.token.type`` input / output), ``gen_ai.client.operation.duration`` (histogram, ``s``,
  ``error.type`` when it failed), and the counters ``rlm.tokens`` (``{token}``, with ``gen_ai.token.type``) and
  ``rlm.cost`` (``USD``, priced calls only): ``gen_ai.operation.name`` (chat), ``gen_ai.request.model``,
  ``gen_ai.provider.name``, ``rlm.environment`` (of the calling run), ``rlm.role`` (root / sub).

The model calls come from the live ``model_call_end`` events (``live_events``); a run that sent none (a host that
does not deliver them) is counted from its ``step`` usage (root calls) and ``sub_call`` usage instead, and has
no operation durations.

Export: the sinks of one process sending to the same place share one ``MeterProvider`` (their own, never the
global one), so concurrent run trees make one set of streams; its reader is collected and exported explicitly
when a root run finishes and at close (no background thread: a CLI exits right after). Temporality is the OTLP
exporters' (``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE``): cumulative since the provider was made by
default. A failure never raises: one warning on ``rlm.sinks`` per sink (none when the span export already
reported this backend down); the next export (a root run's end, close) is tried once ``retry_after`` seconds
have passed, and with cumulative temporality carries what the failed one did not.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, Optional

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExporter, MetricExportResult

from rlm_host import RunEvent
from rlm_host.sdk.observability import error_type, model_name
from rlm_sink_otel.convert import SCOPE_NAME, make_resource
from rlm_sink_otel.folded_logs import explained_export
from rlm_sink_otel.metrics_export import METRIC_EXPORTER_LOGGERS, TEMPORALITY_ENV

logger = logging.getLogger("rlm.sinks")

REWARD_BUCKETS = (-1.0, -0.5, 0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
DURATION_BUCKETS = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
CALL_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)  # semconv
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)


def provider_name(provider: Any, model: Any) -> str:
    """The provider given, else the model's ``provider:`` prefix (the one the kit's ``model_name`` takes off)."""
    text = str(model or "")
    return str(provider or "") or (text.partition(":")[0] if model_name(text) != text else "")


class MetricsPipeline:
    """A ``MeterProvider`` with an on-demand reader, the instruments and an exporter; shared by the sinks of one
    process that send to the same place (:meth:`acquire` / :meth:`release`), shut down with the last of them."""

    _shared: dict[tuple, "MetricsPipeline"] = {}
    _shared_lock = threading.Lock()

    def __init__(self, exporter: MetricExporter, service_name: str = "rlm", target: str = "",
                 probe: Optional[Callable[[], Optional[str]]] = None) -> None:
        self.exporter, self.target, self.probe = exporter, target, probe
        self.unsupported = False  # the backend answered that it takes no metrics (404/405…): not sent again
        # what the exporter prefers (OTEL_EXPORTER_OTLP_METRICS_*), as the SDK's periodic reader takes it
        self.reader = InMemoryMetricReader(getattr(exporter, "_preferred_temporality", None),
                                           getattr(exporter, "_preferred_aggregation", None))
        self.provider = MeterProvider(metric_readers=[self.reader], resource=make_resource(service_name),
                                      shutdown_on_exit=False)
        try:
            version = metadata.version("rlm-host")
        except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
            version = "0"
        meter = self.provider.get_meter(SCOPE_NAME, version)
        self.runs = meter.create_counter("rlm.runs", "{run}", "Runs finished (root and child runs, by rlm.depth)")
        self.steps = meter.create_counter("rlm.steps", "{step}", "Steps of the runs")
        self.reward = meter.create_histogram("rlm.reward", "1", "A run's total reward",
                                             explicit_bucket_boundaries_advisory=REWARD_BUCKETS)
        self.duration = meter.create_histogram("rlm.run_duration", "s", "A run's wall-clock duration",
                                               explicit_bucket_boundaries_advisory=DURATION_BUCKETS)
        self.tokens = meter.create_counter("rlm.tokens", "{token}", "Tokens of the model calls")
        self.cost = meter.create_counter("rlm.cost", "USD", "Cost of the priced model calls")
        self.token_usage = meter.create_histogram("gen_ai.client.token.usage", "{token}", "Tokens per model call",
                                                  explicit_bucket_boundaries_advisory=TOKEN_BUCKETS)
        self.call_duration = meter.create_histogram("gen_ai.client.operation.duration", "s",
                                                    "Duration of a model call",
                                                    explicit_bucket_boundaries_advisory=CALL_BUCKETS)
        self.exported = self.failures = 0
        self.users = 0
        self._key: Optional[tuple] = None
        self._changes = self._sent = 0  # measurements recorded / recorded at the last successful export
        self._mark = threading.Lock()
        self._export_lock = threading.Lock()
        self._down_until = 0.0

    @classmethod
    def acquire(cls, key: tuple, make: Callable[[], "MetricsPipeline"]) -> "MetricsPipeline":
        """The pipeline shared under ``key`` (made by ``make`` when there is none), with one more user."""
        key = key + (os.environ.get(TEMPORALITY_ENV, ""), os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""))
        with cls._shared_lock:
            pipeline = cls._shared.get(key)
            if pipeline is None:
                pipeline = cls._shared[key] = make()
                pipeline._key = key
            pipeline.users += 1
            return pipeline

    def release(self) -> None:
        """One user less; the last one shuts the provider and the exporter down (never raises)."""
        with self._shared_lock:
            self.users -= 1
            if self.users > 0:
                return
            if self._key is not None and self._shared.get(self._key) is self:
                del self._shared[self._key]
        for close in (self.provider.shutdown, self.exporter.shutdown):
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - a backend problem must not end the run badly
                logger.debug("otel sink: shutting the metrics pipeline down: %s", exc)

    def changed(self) -> None:
        with self._mark:
            self._changes += 1

    def export(self, retry_after: float) -> Optional[tuple[bool, str]]:
        """Collect and export what changed since the last success: (ok, the problem), or None when there was
        nothing new or the backend failed less than ``retry_after`` seconds ago."""
        with self._export_lock:
            with self._mark:
                changes = self._changes
            if changes == self._sent or time.monotonic() < self._down_until:
                return None
            problem = self.probe() if self.probe is not None and (self.failures or not self.exported) else None
            ok, reason = (False, problem) if problem else self._send()
            if ok:
                self._sent, self.exported = changes, self.exported + 1
            else:
                self.failures += 1
                self._down_until = time.monotonic() + retry_after
            return ok, reason

    def _send(self) -> tuple[bool, str]:
        def export() -> Any:
            data = self.reader.get_metrics_data()
            return MetricExportResult.SUCCESS if data is None else self.exporter.export(data)

        return explained_export(self.exporter, export, MetricExportResult.SUCCESS, *METRIC_EXPORTER_LOGGERS)


#: Answers meaning "this endpoint takes no metrics" rather than "it is down": said once at info level, not retried.
_NO_METRICS_HERE = ("HTTP 404", "HTTP 405", "HTTP 415", "HTTP 501")


class _Run:
    """What a run's measurements carry, and whether its model calls come as ``model_call_end`` events."""

    def __init__(self, attributes: dict[str, Any], environment: str, model: Any, provider: Any, ts: float) -> None:
        self.attributes, self.environment, self.model, self.provider = attributes, environment, model, provider
        self.start_ts = self.last_ts = ts
        self.live_calls = False


class RunMetrics:
    """Records the run events a sink gets on a :class:`MetricsPipeline` and exports when a root run finishes and at
    close (see the module docstring). ``already_reported()`` True keeps its warning back (the backend's failure
    was already said). Thread-safe; never raises on a backend problem."""

    live_events: frozenset[str] = frozenset({"model_call_end"})
    retry_after: float = 30.0

    def __init__(self, pipeline: MetricsPipeline, *, name: str = "otel",
                 already_reported: Optional[Callable[[], bool]] = None) -> None:
        self.pipeline, self.name = pipeline, name
        self.already_reported = already_reported
        self.warned = False
        self._runs: dict[str, _Run] = {}
        self._lock = threading.RLock()
        self._closed = False

    # ------------------------------------------------------------------ the Sink protocol

    def handle(self, event: RunEvent) -> None:
        with self._lock:
            if self._closed:
                return
            handler = {"run_start": self._on_run_start, "step": self._on_step, "sub_call": self._on_sub_call,
                       "model_call_end": self._on_model_call, "final": self._on_final}.get(event.type)
            if handler is None:
                return
            handler(event, event.data if isinstance(event.data, Mapping) else {})
            run = self._runs.get(event.run_id)
            if run is not None:
                run.last_ts = max(run.last_ts, event.ts)
        if event.type == "final" and not event.parent_run_id:
            self.flush()

    def flush(self) -> bool:
        """Export what changed now (unless the backend failed less than ``retry_after`` s ago)."""
        if self.pipeline.unsupported:
            return True
        outcome = self.pipeline.export(self.retry_after)
        if outcome is None or outcome[0]:
            return True
        if outcome[1].startswith(_NO_METRICS_HERE):  # a traces-only backend (Phoenix: 405, Jaeger: 404)
            self.pipeline.unsupported = True
            logger.info("%s sink: %s takes no OTLP metrics (%s): only spans are sent there", self.name,
                        self.pipeline.target or "the backend", outcome[1][:60])
            return True
        if not self.warned:
            self.warned = True
            if not (self.already_reported is not None and self.already_reported()):
                target = f" to {self.pipeline.target}" if self.pipeline.target else ""
                logger.warning("%s sink: could not export metrics%s: %s (later failures are not reported; "
                               "retrying every %gs; [sink.otel] metrics = false turns them off)", self.name, target,
                               outcome[1], self.retry_after)
        return False

    def close(self) -> None:
        """Count the runs left open as unfinished, export, release the pipeline. Idempotent, never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for run_id, run in list(self._runs.items()):
                self._finish(run, {"completed": False, "termination_reason": "unfinished",
                                   "duration_s": run.last_ts - run.start_ts})
                del self._runs[run_id]
        try:
            self.flush()
        except Exception as exc:  # noqa: BLE001 - never raise from close
            logger.warning("%s sink: exporting metrics failed: %s", self.name, exc)
        finally:
            self.pipeline.release()

    # ------------------------------------------------------------------ events

    def _on_run_start(self, event: RunEvent, data: Mapping[str, Any]) -> None:
        settings = got if isinstance(got := data.get("settings"), Mapping) else {}
        environment = str(data.get("environment") or "")
        attributes: dict[str, Any] = {
            "rlm.environment": environment,
            "rlm.framework": str(data.get("framework") or "native"),
            "gen_ai.request.model": model_name(str(data.get("model") or "")),
            "gen_ai.provider.name": provider_name(data.get("provider"), data.get("model")),
            "rlm.depth": int(event.depth or 0),
        }
        labels = got if isinstance(got := settings.get("labels"), Mapping) else {}
        attributes.update({f"rlm.label.{key}": str(value) for key, value in labels.items()})
        self._runs[event.run_id] = _Run(attributes, environment, data.get("model"), data.get("provider"), event.ts)

    def _run(self, event: RunEvent, data: Mapping[str, Any]) -> _Run:
        """The run of ``event``; one made from the event itself when its run_start was not seen."""
        run = self._runs.get(event.run_id)
        if run is None:
            self._on_run_start(event, data)
            run = self._runs[event.run_id]
        return run

    def _on_step(self, event: RunEvent, data: Mapping[str, Any]) -> None:
        run = self._run(event, {})
        self.pipeline.steps.add(1, {**run.attributes, "rlm.action": str(data.get("action") or "")})
        self.pipeline.changed()
        usage = got if isinstance(got := data.get("usage"), Mapping) else {}
        root = got if isinstance(got := usage.get("root"), Mapping) else {}
        if not run.live_calls and root.get("calls"):  # no model_call_end from this run: its step usage instead
            self._model_call(run, run.model, run.provider, "root", root, one_call=root.get("calls") == 1)

    def _on_sub_call(self, event: RunEvent, data: Mapping[str, Any]) -> None:
        run = self._run(event, {})
        if run.live_calls or data.get("child_run_id"):  # counted by its model_call_end / by the child run itself
            return
        usage = dict(data.get("usage") or {}) if isinstance(data.get("usage"), Mapping) else {}
        if "cost" not in usage and data.get("cost") is not None:
            usage["cost"] = data["cost"]
        if usage:
            self._model_call(run, data.get("model"), data.get("provider"), "sub", usage, one_call=True)

    def _on_model_call(self, event: RunEvent, data: Mapping[str, Any]) -> None:
        run = self._run(event, {})
        run.live_calls = True
        role = str(data.get("role") or "root")
        attributes = self._model_call(run, data.get("model"), data.get("provider"), role, data,
                                      one_call=not data.get("error"))
        if data.get("error"):
            attributes["error.type"] = error_type(str(data["error"]))  # its class: never the message
        if isinstance(data.get("seconds"), (int, float)):
            self.pipeline.call_duration.record(float(data["seconds"]), attributes)

    def _model_call(self, run: _Run, model: Any, provider: Any, role: str, usage: Mapping[str, Any], *,
                    one_call: bool) -> dict[str, Any]:
        """Record one model call's (or, from step usage, several calls') tokens and cost; its attributes."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model_name(str(model or run.model or "")),
            "gen_ai.provider.name": provider_name(provider or run.provider, model or run.model),
            "rlm.environment": run.environment, "rlm.role": role,
            **{k: v for k, v in run.attributes.items() if k.startswith("rlm.label.")},
        }
        for kind in ("input", "output"):
            count = usage.get(f"{kind}_tokens")
            if isinstance(count, int) and not isinstance(count, bool):
                typed = {**attributes, "gen_ai.token.type": kind}
                self.pipeline.tokens.add(count, typed)
                if one_call:
                    self.pipeline.token_usage.record(count, typed)
        cost = usage.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.pipeline.cost.add(float(cost), attributes)
        self.pipeline.changed()
        return attributes

    def _on_final(self, event: RunEvent, data: Mapping[str, Any]) -> None:
        run = self._run(event, data)
        self._finish(run, data, event.ts)
        del self._runs[event.run_id]

    def _finish(self, run: _Run, data: Mapping[str, Any], ts: Optional[float] = None) -> None:
        attributes = {**run.attributes, "rlm.completed": bool(data.get("completed")),
                      "rlm.termination_reason": str(data.get("termination_reason") or "")}
        self.pipeline.runs.add(1, attributes)
        reward = data.get("total_reward")
        if isinstance(reward, (int, float)) and not isinstance(reward, bool):
            self.pipeline.reward.record(float(reward), attributes)
        duration = data.get("duration_s")
        if not isinstance(duration, (int, float)) or isinstance(duration, bool):
            duration = (ts if ts is not None else run.last_ts) - run.start_ts
        self.pipeline.duration.record(max(0.0, float(duration)), attributes)
        self.pipeline.changed()
