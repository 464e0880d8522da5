"""``[sink.otel]``: the settings of the ``otel`` sink, and how the standard ``OTEL_EXPORTER_OTLP_*`` variables
fill what the section leaves out (as the OpenTelemetry specification defines them)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Optional
from urllib.parse import urlsplit

from pydantic import ConfigDict, Field

from rlm_host.sdk.observability import ContentSettings

HTTP_DEFAULT = "http://localhost:4318/v1/traces"
GRPC_DEFAULT = "localhost:4317"
TRACES_PATH = "v1/traces"
FILE_NAME = "otel-traces.jsonl"
ENDPOINT_ENV = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
HEADERS_ENV = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
INSECURE_ENV = ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE")


class OtelSinkSettings(ContentSettings):
    """``[sink.otel]`` (or ``RLM_SINK__OTEL__<FIELD>``)."""

    model_config = ConfigDict(extra="forbid")

    exporter: Literal["otlp-http", "otlp-grpc", "file"] = Field("otlp-http", description="how spans are sent")
    endpoint: Optional[str] = Field(None, description="OTLP endpoint (default: OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT, "
                                    "else http://localhost:4318/v1/traces or localhost:4317 for gRPC)")
    headers: dict[str, str] = Field(default_factory=dict, description="extra request headers (over "
                                    "OTEL_EXPORTER_OTLP_[TRACES_]HEADERS)")
    path: Optional[Path] = Field(None, description="file exporter output "
                                 "(default: <home>/observability/otel-traces.jsonl)")
    service_name: str = Field("rlm", description="the resource's service.name")
    timeout: float = Field(10.0, gt=0, description="seconds per export (retries included)")
    insecure: Optional[bool] = Field(None, description="gRPC without TLS (default: from the endpoint's scheme; "
                                     "true for a loopback host without scheme)")
    metrics: bool = Field(True, description="also export OTLP metrics (runs, steps, reward, duration, "
                          "tokens, cost) when a root run ends; the file exporter writes them beside the spans' "
                          "file")
    metrics_endpoint: Optional[str] = Field(None, description="OTLP metrics endpoint (default: the endpoint "
                                            "with /v1/traces → /v1/metrics, else "
                                            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT "
                                            "+ /v1/metrics, else http://localhost:4318/v1/metrics or the gRPC "
                                            "endpoint)")

    def resolved_endpoint(self, environ: Optional[Mapping[str, str]] = None) -> tuple[str, str]:
        """(the endpoint, where it came from: ``settings``, an env variable's name or ``default``)."""
        env = os.environ if environ is None else environ
        if self.endpoint:
            return self.endpoint, "settings"
        grpc = self.exporter == "otlp-grpc"
        if env.get(ENDPOINT_ENV[0]):
            return env[ENDPOINT_ENV[0]], ENDPOINT_ENV[0]
        if env.get(ENDPOINT_ENV[1]):
            base = env[ENDPOINT_ENV[1]]
            return (base if grpc else base.rstrip("/") + "/" + TRACES_PATH), ENDPOINT_ENV[1]
        return (GRPC_DEFAULT if grpc else HTTP_DEFAULT), "default"

    def resolved_headers(self, environ: Optional[Mapping[str, str]] = None) -> tuple[dict[str, str], list[str]]:
        """(the headers to send, the names of their sources: env variables and/or ``[sink.otel] headers``)."""
        from opentelemetry.util.re import parse_env_headers

        env = os.environ if environ is None else environ
        headers: dict[str, str] = {}
        sources = []
        for name in HEADERS_ENV:
            if env.get(name):
                headers.update(parse_env_headers(env[name], liberal=True))
                sources.append(name)
                break  # the signal-specific variable replaces the general one
        if self.headers:
            headers.update(self.headers)
            sources.append("[sink.otel] headers")
        return headers, sources

    def resolved_insecure(self, endpoint: str, environ: Optional[Mapping[str, str]] = None) -> bool:
        """gRPC without TLS? The setting, else the scheme (http → yes, https → no), else the OTEL_…_INSECURE
        variables, else yes for a loopback host only."""
        if self.insecure is not None:
            return self.insecure
        scheme = endpoint.split("://", 1)[0].lower() if "://" in endpoint else ""
        if scheme in ("http", "https"):
            return scheme == "http"
        env = os.environ if environ is None else environ
        for name in INSECURE_ENV:
            if env.get(name):
                return env[name].strip().lower() == "true"
        from rlm_host.sdk.commands import is_loopback_host

        host = host_port(endpoint, 4317)[0]
        return host == "0.0.0.0" or is_loopback_host(host)  # 0.0.0.0: this machine, as a client connects to it

    def file_path(self, home: Path) -> Path:
        return Path(self.path).expanduser() if self.path is not None else Path(home) / "observability" / FILE_NAME


def host_port(endpoint: str, default_port: int) -> tuple[str, int]:
    """The host and port an endpoint (a URL, or ``host:port`` as gRPC takes it) connects to."""
    parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else default_port)
    return parts.hostname or "localhost", port
