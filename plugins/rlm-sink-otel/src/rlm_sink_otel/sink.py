"""The ``otel`` sink: its factory (``create``), its exporter per ``[sink.otel] exporter``, and ``check`` for
``rlm plugins doctor`` (is the endpoint reachable, which header variables are set — names, never values)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Optional

from rlm_host import Readiness
from rlm_host.sdk.observability import content_policy
from rlm_sink_otel.settings import OtelSinkSettings, host_port

CONNECT_TIMEOUT = 1.0
logger = logging.getLogger("rlm.sinks")


def make_exporter(settings: OtelSinkSettings, home: Path) -> tuple[Any, str]:
    """(the SDK ``SpanExporter`` the settings ask for, a description of where it sends)."""
    if settings.exporter == "file":
        from rlm_sink_otel.otlp_json import OTLPJsonLinesExporter

        path = settings.file_path(home)
        return OTLPJsonLinesExporter(path), str(path)
    endpoint, _ = settings.resolved_endpoint()
    headers, _ = settings.resolved_headers()
    if settings.exporter == "otlp-grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        exporter = GrpcExporter(endpoint=endpoint, insecure=settings.resolved_insecure(endpoint),
                                headers={k.lower(): v for k, v in headers.items()},  # gRPC metadata keys are lower-case
                                timeout=settings.timeout)
        return exporter, f"grpc {endpoint}"
    from rlm_sink_otel.http_exporter import otlp_http_exporter

    return otlp_http_exporter(endpoint, headers, settings.timeout), endpoint


def create(settings: Optional[OtelSinkSettings], services: Any) -> Any:
    """The factory named by the ``otel`` SinkSpec: ``create(settings, services)``: the span export and, unless
    ``[sink.otel] metrics = false``, the metrics, in one :class:`OtelSink`."""
    from rlm_sink_otel.export_sink import SpanExportSink, tcp_probe
    from rlm_sink_otel.otel_sink import OtelSink

    settings = settings or OtelSinkSettings()
    exporter, target = make_exporter(settings, Path(services.home))
    probe = None
    if settings.exporter != "file":
        endpoint, _ = settings.resolved_endpoint()
        probe = tcp_probe(*host_port(endpoint, _default_port(settings)), CONNECT_TIMEOUT)
    spans = SpanExportSink(exporter, content=content_policy(settings), service_name=settings.service_name,
                           name="otel", target=target, probe=probe)
    metrics = None
    if settings.metrics:
        try:
            metrics = make_metrics(settings, Path(services.home), spans)
        except Exception as exc:  # noqa: BLE001 - metrics that cannot start must not cost the spans
            logger.warning("otel sink: no metrics for this run: %s: %s", type(exc).__name__, exc)
    return OtelSink(spans, metrics)


def make_metrics(settings: OtelSinkSettings, home: Path, spans: Any = None) -> Any:
    """The ``RunMetrics`` of the settings, on the pipeline shared with the other sinks of this process sending to
    the same place; its warning is kept back when ``spans`` already reported that host down."""
    from rlm_sink_otel.export_sink import tcp_probe
    from rlm_sink_otel.metrics import MetricsPipeline, RunMetrics
    from rlm_sink_otel.metrics_export import make_metric_exporter, metrics_endpoint, metrics_file, metrics_headers

    if settings.exporter == "file":
        where = str(metrics_file(settings, home))
        key: tuple = ("file", where, settings.service_name)
        same_host = False
    else:
        where, _ = metrics_endpoint(settings)
        key = (settings.exporter, where, tuple(sorted(metrics_headers(settings).items())), settings.service_name,
               settings.timeout, settings.resolved_insecure(where) if settings.exporter == "otlp-grpc" else None)
        same_host = host_port(where, _default_port(settings)) == host_port(settings.resolved_endpoint()[0],
                                                                             _default_port(settings))

    def make() -> MetricsPipeline:
        exporter, target = make_metric_exporter(settings, home)
        probe = None if settings.exporter == "file" else tcp_probe(*host_port(where, _default_port(settings)),
                                                                    CONNECT_TIMEOUT)
        return MetricsPipeline(exporter, settings.service_name, target, probe)

    reported = (lambda: bool(getattr(spans, "failures", 0))) if same_host and spans is not None else None
    return RunMetrics(MetricsPipeline.acquire(key, make), name="otel", already_reported=reported)


def _default_port(settings: OtelSinkSettings) -> int:
    return 4317 if settings.exporter == "otlp-grpc" else 4318


def check(settings: Optional[OtelSinkSettings]) -> Readiness:
    """Doctor: the file exporter's folder is writable; an OTLP endpoint (and the metrics endpoint, when on another
    host) accepts a TCP connection within 1 s."""
    settings = settings or OtelSinkSettings()
    if settings.exporter == "file":
        from rlm_sink_otel.metrics_export import metrics_file

        metrics = f"; metrics → {metrics_file(settings, Path('.')).name} beside it" if settings.metrics else ""
        if settings.path is None:
            return Readiness(True, f"file exporter → <home>/observability/{settings.file_path(Path('.')).name}"
                                   f"{metrics}")
        folder = settings.file_path(Path(".")).parent
        probe = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
        if probe.is_dir() and os.access(probe, os.W_OK):
            return Readiness(True, f"file exporter → {settings.path}{metrics}")
        return Readiness(False, f"{probe} is not writable", "set [sink.otel] path to a writable file")
    endpoint, source = settings.resolved_endpoint()
    _, header_sources = settings.resolved_headers()
    host, port = host_port(endpoint, _default_port(settings))
    headers = f"; headers from {', '.join(header_sources)}" if header_sources else "; no headers set"
    where = f"{settings.exporter} → {endpoint} ({source}){headers}"
    from rlm_sink_otel.export_sink import tcp_probe

    problem = tcp_probe(host, port, CONNECT_TIMEOUT)()
    if problem:
        hint = "start a collector there, or set [sink.otel] endpoint / OTEL_EXPORTER_OTLP_ENDPOINT"
        return Readiness(False, f"{where}: {problem}", hint)
    if not settings.metrics:
        return Readiness(True, f"{where}: reachable; metrics off")
    from rlm_sink_otel.metrics_export import metrics_endpoint

    metrics, metrics_source = metrics_endpoint(settings)
    detail = f"{where}: reachable; metrics → {metrics} ({metrics_source})"
    metrics_host = host_port(metrics, _default_port(settings))
    problem = tcp_probe(*metrics_host, CONNECT_TIMEOUT)() if metrics_host != (host, port) else None
    if problem:
        return Readiness(False, f"{detail}: {problem}", "set [sink.otel] metrics_endpoint, or metrics = false")
    return Readiness(True, detail)
