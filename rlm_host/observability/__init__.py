"""Observability sinks built into the host. ``local`` (``LocalJSONLSink``) keeps run and step summaries as
JSON lines under ``<home>/observability``; other sinks (OpenTelemetry, MLflow…) are plugins."""

from rlm_host.observability.local_jsonl import LocalJSONLSink, LocalSinkSettings, create

__all__ = ["LocalJSONLSink", "LocalSinkSettings", "create"]
