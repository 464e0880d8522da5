"""rlm-sink-local: the ``local`` sink, run and step summaries as JSON lines under ``<home>/observability``.

``LocalJSONLSink``, ``LocalSinkSettings`` and ``create`` live in ``rlm_sink_local.sink`` (imported when a run
opens the sink, not at ``rlm`` start).
"""
