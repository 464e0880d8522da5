"""rlm-sink-langsmith: the ``langsmith`` sink, rlm run trees as LangSmith runs (``chain`` per run, ``llm`` per
model call, ``tool`` per code execution) with ``reward`` / ``completed`` feedback, through the LangSmith SDK.

- ``rlm_sink_langsmith.settings``: :class:`LangSmithSinkSettings` (``[sink.langsmith]``);
- ``rlm_sink_langsmith.runs``: the host's span records as LangSmith run dicts (ids, dotted order, usage);
- ``rlm_sink_langsmith.sink``: the sink (``create``) and ``check`` for ``rlm plugins doctor``.
"""
