"""rlm-env-traces: the ``trace_analysis`` environment and ``rlm traces`` over OpenTelemetry trace files."""

PLUGIN_NAME = "rlm-env-traces"
