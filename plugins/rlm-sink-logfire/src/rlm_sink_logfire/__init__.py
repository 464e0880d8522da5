"""rlm-sink-logfire: the ``logfire`` sink, rlm run trees as Logfire spans, sent through a local (non-global)
Logfire SDK instance. Logfire has no scores: the reward is the root span's ``rlm.total_reward`` attribute.

- ``rlm_sink_logfire.settings``: :class:`LogfireSinkSettings` (``[sink.logfire]``);
- ``rlm_sink_logfire.sink``: the sink (``create``) and ``check`` for ``rlm plugins doctor``.
"""
