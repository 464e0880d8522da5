"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "otel",
            "OpenTelemetry GenAI spans over OTLP/HTTP, OTLP/gRPC or to an OTLP-JSON lines file",
            "rlm_sink_otel.sink:create",
            settings="rlm_sink_otel.settings:OtelSinkSettings",  # [sink.otel]
            requires=("opentelemetry",),
            install_hint="pip install rlm-sink-otel",
            check="rlm_sink_otel.sink:check",
        )
    ]
