"""The ``otel`` sink: its factory (``create``), its exporter per ``[sink.otel] exporter``, and ``check`` for
``rlm plugins doctor`` (is the endpoint reachable, which header variables are set — names, never values)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from rlm_host import Readiness
from rlm_sink_otel.settings import OtelSinkSettings, host_port

CONNECT_TIMEOUT = 1.0


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
                                timeout=settings.timeout)  # fmt: skip
        return exporter, f"grpc {endpoint}"
    from rlm_sink_otel.http_exporter import otlp_http_exporter

    return otlp_http_exporter(endpoint, headers, settings.timeout), endpoint


def create(settings: Optional[OtelSinkSettings], services: Any) -> Any:
    """The factory named by the ``otel`` SinkSpec: ``create(settings, services)``."""
    from rlm_sink_otel.export_sink import SpanExportSink

    from rlm_sink_otel.export_sink import tcp_probe

    settings = settings or OtelSinkSettings()
    exporter, target = make_exporter(settings, Path(services.home))
    probe = None
    if settings.exporter != "file":
        endpoint, _ = settings.resolved_endpoint()
        probe = tcp_probe(*host_port(endpoint, 4317 if settings.exporter == "otlp-grpc" else 4318), CONNECT_TIMEOUT)
    return SpanExportSink(exporter, service_name=settings.service_name, name="otel", target=target, probe=probe,
                          content=settings.content_policy())  # fmt: skip


def check(settings: Optional[OtelSinkSettings]) -> Readiness:
    """Doctor: the file exporter's folder is writable; an OTLP endpoint accepts a TCP connection within 1 s."""
    settings = settings or OtelSinkSettings()
    if settings.exporter == "file":
        if settings.path is None:
            return Readiness(True, f"file exporter → <home>/observability/{settings.file_path(Path('.')).name}")
        folder = settings.file_path(Path(".")).parent
        probe = next((p for p in (folder, *folder.parents) if p.exists()), Path("/"))
        if probe.is_dir() and os.access(probe, os.W_OK):
            return Readiness(True, f"file exporter → {settings.path}")
        return Readiness(False, f"{probe} is not writable", "set [sink.otel] path to a writable file")
    endpoint, source = settings.resolved_endpoint()
    _, header_sources = settings.resolved_headers()
    host, port = host_port(endpoint, 4317 if settings.exporter == "otlp-grpc" else 4318)
    headers = f"; headers from {', '.join(header_sources)}" if header_sources else "; no headers set"
    where = f"{settings.exporter} → {endpoint} ({source}){headers}"
    from rlm_sink_otel.export_sink import tcp_probe

    problem = tcp_probe(host, port, CONNECT_TIMEOUT)()
    if problem:
        hint = "start a collector there, or set [sink.otel] endpoint / OTEL_EXPORTER_OTLP_ENDPOINT"
        return Readiness(False, f"{where}: {problem}", hint)
    return Readiness(True, f"{where}: reachable")
