"""The observability kit: for sink plugins (``rlm_register_sinks``, a ``SinkSpec`` whose factory is called with
``HostServices`` and returns a ``Sink``: ``handle(event)`` for each ``RunEvent``, then ``close()``).

A sink that exports traces builds the run's span tree with ``SpanBuilder`` (one ``SpanRecord`` per run, step and
model call, ``SpanEventRecord`` inside them), walks it parents first with ``tree_order``, and names it with the
ids a re-export gives again (``trace_id_for``, ``span_id_for``). Such a sink sets ``live_events =
SPAN_LIVE_EVENTS`` (every model call, failed ones included, is a span). ``RunEvent`` itself is in the root.
What run content a sink sends is decided once, by ``content_policy(settings)``: every sink asks it and sends
content only through the ``ContentPolicy`` it returns (the ``SpanBuilder`` takes it; params, tags, error messages
and uploaded files go through its ``text``, ``error`` and ``artifact``). A sink's settings take the fields it
reads from ``ContentSettings`` (``capture_content``, ``content_max_chars``). Any other text a sink cuts for a log
line or a field (a backend's answer, an SDK's error) goes through ``redacted_clip``: redacted, then cut, so a
secret the cut falls inside leaves no prefix.

Reference plugins to copy: ``plugins/rlm-sink-otel`` (spans to OpenTelemetry), ``plugins/_template`` (a CSV
sink, the smallest). Contract suite: ``rlm_host.testing.SinkContract``.
"""

from rlm_host.events import Sink, prompt_hash, sub_call_text
from rlm_host.observability.content import ContentPolicy, ContentSettings, chat_messages, content_policy
from rlm_host.redact import redacted_clip
from rlm_host.observability.spans import (SPAN_LIVE_EVENTS, SpanBuilder, SpanEventRecord, SpanRecord, error_type,
                                          model_name, span_id_for, trace_id_for, tree_order)

__all__ = ["Sink", "ContentPolicy", "ContentSettings", "content_policy", "chat_messages", "SpanBuilder", "SpanRecord",
           "SpanEventRecord", "tree_order", "SPAN_LIVE_EVENTS", "model_name", "error_type", "trace_id_for",
           "span_id_for", "redacted_clip", "prompt_hash", "sub_call_text"]
