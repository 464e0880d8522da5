"""The ``otel`` sink keeps the sink protocol with each exporter, and sends the run tree as GenAI spans."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from otel_support import PLUGIN, assert_run_tree
from rlm_host.testing import SinkContract
from rlm_sink_otel.settings import OtelSinkSettings
from rlm_sink_otel.testing import OTLPGrpcReceiver, OTLPReceiver, decode_trace_body

SECRETS = {"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20s3cr3t-token-value"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestOtelFileSink(SinkContract):
    sink = "otel"
    distribution = PLUGIN

    def settings(self, home: Path) -> OtelSinkSettings:
        return OtelSinkSettings(exporter="file")

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__OTEL__EXPORTER": "file"}

    def received(self, home: Path) -> str:
        folder = home / "observability"  # the spans' file and the metrics' file beside it
        return "\n".join(p.read_text() for p in sorted(folder.glob("*"))) if folder.is_dir() else ""

    def check_output(self, events, home: Path) -> None:
        lines = (home / "observability" / "otel-traces.jsonl").read_text().splitlines()
        batches = [json.loads(line) for line in lines]
        assert all(set(b) == {"resourceSpans"} for b in batches)
        spans = [s for line in lines for s in decode_trace_body(line.encode(), "application/json")]
        assert_run_tree(spans, events)


class TestOtelHttpSink(SinkContract):
    sink = "otel"
    distribution = PLUGIN

    @pytest.fixture(autouse=True)
    def receiver(self):
        with OTLPReceiver() as receiver:
            self.server = receiver
            yield receiver

    def settings(self, home: Path) -> OtelSinkSettings:
        return OtelSinkSettings(endpoint=self.server.traces_url, timeout=2, headers={"Authorization": "Bearer t"})

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__OTEL__ENDPOINT": self.server.traces_url}

    def unreachable_settings(self, home: Path) -> OtelSinkSettings:
        return OtelSinkSettings(endpoint=f"http://127.0.0.1:{_closed_port()}/v1/traces", timeout=1)

    def secret_environ(self) -> dict[str, str]:
        return SECRETS

    def received(self, home: Path) -> str:
        return self.server.received_text()

    def check_output(self, events, home: Path) -> None:
        assert not self.server.errors
        posts = [r for r in self.server.requests if r.method == "POST" and not r.path.endswith("/metrics")]
        assert posts and all(r.path == "/v1/traces" and r.headers["content-type"] == "application/x-protobuf"
                             for r in posts)
        assert_run_tree(self.server.spans, events)


class TestOtelGrpcSink(SinkContract):
    sink = "otel"
    distribution = PLUGIN

    @pytest.fixture(autouse=True)
    def receiver(self):
        with OTLPGrpcReceiver() as receiver:
            self.server = receiver
            yield receiver

    def settings(self, home: Path) -> OtelSinkSettings:
        return OtelSinkSettings(exporter="otlp-grpc", endpoint=self.server.endpoint, timeout=2,
                                headers={"X-Tenant": "t1"})

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__OTEL__EXPORTER": "otlp-grpc", "RLM_SINK__OTEL__ENDPOINT": self.server.endpoint}

    def unreachable_settings(self, home: Path) -> OtelSinkSettings:
        return OtelSinkSettings(exporter="otlp-grpc", endpoint=f"127.0.0.1:{_closed_port()}", timeout=1)

    def secret_environ(self) -> dict[str, str]:
        return SECRETS

    def received(self, home: Path) -> str:
        return self.server.received_text()

    def check_output(self, events, home: Path) -> None:
        assert_run_tree(self.server.spans, events)
