"""Where the ``otel`` sink's metrics go: the endpoint, the SDK ``MetricExporter`` per ``[sink.otel] exporter``, and
``OTLPJsonMetricLinesExporter`` for the ``file`` exporter.

The endpoint follows the section first, as the spans' does, then the standard variables: ``metrics_endpoint``;
else the section's ``endpoint`` (``…/v1/traces`` → ``…/v1/metrics``); else ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``
(as is); else ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/metrics``; else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``
(``…/traces`` → ``…/metrics``); else ``http://localhost:4318/v1/metrics``. gRPC takes the same sources as they are
(one ``host:port`` serves every signal), else ``localhost:4317``. The file exporter writes next to the spans' file
(``otel-traces.jsonl`` → ``otel-metrics.jsonl``; another name gets ``-metrics``).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Union

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics import Counter, Histogram, ObservableCounter, UpDownCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, MetricExporter, MetricExportResult, MetricsData

from rlm_sink_otel.settings import GRPC_DEFAULT, OtelSinkSettings

HTTP_DEFAULT = "http://localhost:4318/v1/metrics"
METRICS_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
METRICS_HEADERS_ENV = ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
TEMPORALITY_ENV = "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"
#: The SDK metric exporters' loggers: their lines during an export are folded into the sink's one warning.
METRIC_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.metric_exporter",
                           "opentelemetry.exporter.otlp.proto.grpc.exporter",
                           "opentelemetry.exporter.otlp.proto.grpc.metric_exporter")


def _from_traces(url: str) -> str:
    """``…/v1/traces`` → ``…/v1/metrics``; a URL not ending in ``/traces`` is taken as the base URL."""
    base = url.rstrip("/")
    if base.endswith("/traces"):
        return base[: -len("traces")] + "metrics"
    return base + "/v1/metrics"


def metrics_endpoint(settings: OtelSinkSettings, environ: Optional[Mapping[str, str]] = None) -> tuple[str, str]:
    """(the metrics endpoint, where it came from: a setting's name, an env variable's name or ``default``)."""
    env = os.environ if environ is None else environ
    grpc = settings.exporter == "otlp-grpc"
    if settings.metrics_endpoint:
        return settings.metrics_endpoint, "metrics_endpoint"
    if settings.endpoint:
        return (settings.endpoint if grpc else _from_traces(settings.endpoint)), "endpoint"
    if env.get(METRICS_ENDPOINT_ENV):
        return env[METRICS_ENDPOINT_ENV], METRICS_ENDPOINT_ENV
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        base = env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        return (base if grpc else base.rstrip("/") + "/v1/metrics"), "OTEL_EXPORTER_OTLP_ENDPOINT"
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        traces = env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
        return (traces if grpc else _from_traces(traces)), "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    return (GRPC_DEFAULT if grpc else HTTP_DEFAULT), "default"


def metrics_headers(settings: OtelSinkSettings, environ: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_METRICS_HEADERS`` (else ``OTEL_EXPORTER_OTLP_HEADERS``), then ``[sink.otel] headers``."""
    from opentelemetry.util.re import parse_env_headers

    env = os.environ if environ is None else environ
    headers: dict[str, str] = {}
    for name in METRICS_HEADERS_ENV:
        if env.get(name):
            headers.update(parse_env_headers(env[name], liberal=True))
            break  # the signal-specific variable replaces the general one
    headers.update(settings.headers)
    return headers


def metrics_file(settings: OtelSinkSettings, home: Path) -> Path:
    """The file exporter's metrics file: a sibling of the spans' file."""
    traces = settings.file_path(home)
    stem = traces.stem.replace("traces", "metrics") if "traces" in traces.stem else traces.stem + "-metrics"
    return traces.with_name(stem + traces.suffix)


def temporality(environ: Optional[Mapping[str, str]] = None) -> dict[type, AggregationTemporality]:
    """The temporality per instrument ``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`` asks for, as the SDK's
    OTLP exporters read it: cumulative (the default), ``delta`` or ``lowmemory``."""
    env = os.environ if environ is None else environ
    preference = env.get(TEMPORALITY_ENV, "cumulative").strip().lower()
    delta, cumulative = AggregationTemporality.DELTA, AggregationTemporality.CUMULATIVE
    if preference == "delta":
        return {Counter: delta, Histogram: delta, ObservableCounter: delta, UpDownCounter: cumulative}
    if preference == "lowmemory":
        return {Counter: delta, Histogram: delta, ObservableCounter: cumulative, UpDownCounter: cumulative}
    return {Counter: cumulative, Histogram: cumulative, ObservableCounter: cumulative, UpDownCounter: cumulative}


def make_metric_exporter(settings: OtelSinkSettings, home: Path) -> tuple[MetricExporter, str]:
    """(the SDK ``MetricExporter`` the settings ask for, a description of where it sends)."""
    if settings.exporter == "file":
        path = metrics_file(settings, home)
        return OTLPJsonMetricLinesExporter(path), str(path)
    endpoint, _ = metrics_endpoint(settings)
    headers = metrics_headers(settings)
    if settings.exporter == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcExporter

        exporter = GrpcExporter(endpoint=endpoint, insecure=settings.resolved_insecure(endpoint),
                                headers={k.lower(): v for k, v in headers.items()},  # gRPC metadata: lower-case
                                timeout=settings.timeout)
        return exporter, f"grpc {endpoint}"
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    from rlm_sink_otel.http_exporter import _ExplainingSession

    session = _ExplainingSession()  # keeps why the last POST failed, for the sink's warning
    http = OTLPMetricExporter(endpoint=endpoint, headers=headers, timeout=settings.timeout, session=session)
    http.last_problem = lambda: session.last_problem  # type: ignore[attr-defined]
    return http, endpoint


def encode_metrics_json(data: MetricsData) -> dict[str, Any]:
    """The OTLP/JSON ``ExportMetricsServiceRequest`` of ``data``: ``{"resourceMetrics": [...]}`` (64-bit integers
    as decimal strings, enums as integers)."""
    return MessageToDict(encode_metrics(data), use_integers_for_enums=True)


class OTLPJsonMetricLinesExporter(MetricExporter):
    """A ``MetricExporter`` appending each export as one OTLP/JSON line to ``path`` (the Collector file exporter's
    format; one open/write per export). Thread-safe; the folder is made on first write."""

    def __init__(self, path: Union[str, Path], environ: Optional[Mapping[str, str]] = None) -> None:
        super().__init__(preferred_temporality=temporality(environ))
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._shutdown = False

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        if self._shutdown:
            return MetricExportResult.FAILURE
        line = json.dumps(encode_metrics_json(metrics_data), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self._shutdown = True
