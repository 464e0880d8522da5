"""``[sink.otel]`` with the standard OTEL_EXPORTER_OTLP_* variables, the doctor check, the registration, and the
gRPC exporter against a backend that refuses."""

from __future__ import annotations

import logging
import socket

import pytest

from otel_support import PLUGIN
from rlm_sink_otel.settings import OtelSinkSettings
from rlm_sink_otel.sink import check, create, make_exporter
from rlm_sink_otel.testing import OTLPGrpcReceiver, OTLPReceiver


def test_registers_the_otel_sink(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"sink": ["otel"]}


@pytest.mark.parametrize(("exporter", "environ", "expected"), [
    ("otlp-http", {}, ("http://localhost:4318/v1/traces", "default")),
    ("otlp-grpc", {}, ("localhost:4317", "default")),
    ("otlp-http", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"},
     ("http://c:4318/v1/traces", "OTEL_EXPORTER_OTLP_ENDPOINT")),
    ("otlp-grpc", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, ("http://c:4317", "OTEL_EXPORTER_OTLP_ENDPOINT")),
    ("otlp-http", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/x"},
     ("http://t/x", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")),
])
def test_the_endpoint_follows_the_otel_specification(exporter, environ, expected):
    assert OtelSinkSettings(exporter=exporter).resolved_endpoint(environ) == expected
    mine = OtelSinkSettings(exporter=exporter, endpoint="http://mine")
    assert mine.resolved_endpoint(environ) == ("http://mine", "settings")


def test_headers_come_from_the_variables_and_the_section():
    environ = {"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2",
               "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Authorization=Basic%20xyz"}
    headers, sources = OtelSinkSettings(headers={"x-team": "t"}).resolved_headers(environ)
    assert headers == {"authorization": "Basic xyz", "x-team": "t"}
    assert sources == ["OTEL_EXPORTER_OTLP_TRACES_HEADERS", "[sink.otel] headers"]


@pytest.mark.parametrize(("endpoint", "insecure"), [("localhost:4317", True), ("collector:4317", False),
                                                    ("http://collector:4317", True), ("https://localhost:4317", False)])
def test_grpc_tls_follows_the_scheme(endpoint, insecure):
    assert OtelSinkSettings(exporter="otlp-grpc").resolved_insecure(endpoint, {}) is insecure
    assert OtelSinkSettings(exporter="otlp-grpc", insecure=True).resolved_insecure(endpoint, {}) is True


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError):
        OtelSinkSettings(endpoit="x")


def test_check_reports_reachability_and_header_names_never_values(monkeypatch, tmp_path):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=secret-token")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    with OTLPReceiver() as receiver:
        ready = check(OtelSinkSettings(endpoint=receiver.traces_url))
    assert ready.ok and "reachable" in ready.detail and "OTEL_EXPORTER_OTLP_HEADERS" in ready.detail
    assert "secret-token" not in ready.detail + ready.hint
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = check(OtelSinkSettings(exporter="otlp-grpc", endpoint=f"127.0.0.1:{port}"))
    assert not down.ok and "unreachable" in down.detail and "OTEL_EXPORTER_OTLP_ENDPOINT" in down.hint
    assert check(OtelSinkSettings(exporter="file", path=tmp_path / "a" / "t.jsonl")).ok
    assert check(OtelSinkSettings(exporter="file")).ok


def test_the_file_exporter_defaults_under_the_home(tmp_path):
    exporter, target = make_exporter(OtelSinkSettings(exporter="file"), tmp_path)
    assert exporter.path == tmp_path / "observability" / "otel-traces.jsonl" and target == str(exporter.path)


def test_a_refusing_grpc_backend_is_one_warning(caplog, tmp_path):
    from grpc import StatusCode

    from test_otel_export import _root_run

    with OTLPGrpcReceiver() as receiver:
        receiver.fail_with(StatusCode.PERMISSION_DENIED)
        settings = OtelSinkSettings(exporter="otlp-grpc", endpoint=receiver.endpoint, timeout=1,
                                    headers={"Authorization": "Bearer t"})
        sink = create(settings, type("Services", (), {"home": tmp_path})())
        with caplog.at_level(logging.INFO, logger="rlm.sinks"):
            for event in _root_run():
                sink.handle(event)
            sink.close()
        assert receiver.metadata and receiver.metadata[0]["authorization"] == "Bearer t"
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlm.sinks" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "PERMISSION_DENIED" in warnings[0], warnings
    assert sink.dropped == 3 and not receiver.spans
