"""rlm-sink-langfuse: the ``langfuse`` sink, rlm run trees as Langfuse traces with ``reward`` / ``completed``
scores, sent through the Langfuse Python SDK (v4, OpenTelemetry-based).

- ``rlm_sink_langfuse.settings``: :class:`LangfuseSinkSettings` (``[sink.langfuse]``);
- ``rlm_sink_langfuse.mapping``: the Langfuse attributes of each span (observation type, model, usage, trace);
- ``rlm_sink_langfuse.sink``: the sink (``create``), the shared SDK clients and ``check`` for the doctor.
"""
