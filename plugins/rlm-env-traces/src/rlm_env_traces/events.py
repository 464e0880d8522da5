"""A span's kind and its events, as a view shows them: a readable kind name, and a bounded list of events.

The kind says what a span is — ``CLIENT`` a call out (a model call), ``SERVER`` a request served, ``INTERNAL``
a step of the program — and events say what happened inside it: rlm's own sink records a step's code and its
output (``rlm.code``, ``rlm.output``), a model's reply (``rlm.reply``) and ``exception``, each with attributes
such as ``rlm.text``. Without them a trace shows a step's shape but not what it did.

Both come from untrusted input, and a 16 MB line can hold a million events, so what is kept is bounded when the
line is read: the first ``HEAD_EVENTS`` and the last ``TAIL_EVENTS`` of a span's events (an ``exception`` event
usually comes last), each with at most ``EVENT_ATTRIBUTES`` attributes, its name cut to ``views.SHORT_CHARS`` and
each string value to ``EVENT_VALUE_CHARS``; ``events_left_out`` counts the events not shown (cut here, or dropped
by the SDK that wrote the span: OTLP's ``droppedEventsCount``). Only the events kept are ever converted.
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Callable, Optional

from rlm_env_traces.views import SPAN_ATTRIBUTE_CHARS, capped, short

#: OTLP's ``SpanKind`` enum (0 is ``SPAN_KIND_UNSPECIFIED``, shown as no kind at all).
KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
#: Events kept per span: the first ``HEAD_EVENTS`` and the last ``TAIL_EVENTS``.
HEAD_EVENTS = 96
TAIL_EVENTS = 32
MAX_EVENTS = HEAD_EVENTS + TAIL_EVENTS
#: Attributes kept per event, characters per string value.
EVENT_ATTRIBUTES = 64
EVENT_VALUE_CHARS = SPAN_ATTRIBUTE_CHARS
#: An event's time is kept when it fits 64 bits (unix nanoseconds), as the index keeps a span's.
TIME_CAP = 1 << 63
#: An unknown kind is kept as text of at most this many characters.
KIND_CHARS = 64
_PREFIXES = ("SPAN_KIND_", "SPANKIND.", "KIND_")


def kind_name(value: Any) -> Optional[str]:
    """``INTERNAL`` / ``SERVER`` / ``CLIENT`` / ``PRODUCER`` / ``CONSUMER`` from OTLP's 1..5, a digit string, or a
    name in any case with or without a prefix (``"SPAN_KIND_CLIENT"``, ``"SpanKind.CLIENT"``, ``"client"``); None
    for no kind (absent, 0, unspecified, not a scalar); any other text kept, cut to ``KIND_CHARS``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return KINDS[value] if 0 < value < len(KINDS) else None
    if not isinstance(value, str):
        return None
    text = value.strip()[:KIND_CHARS]
    if text.isdigit():
        return kind_name(int(text))
    upper = text.upper()
    for prefix in _PREFIXES:
        if upper.startswith(prefix):
            upper = upper[len(prefix):]
            break
    if upper in KINDS:
        return None if upper == "UNSPECIFIED" else upper
    return text or None


def events_of(raw: Any, dropped: Any, attributes_of: Callable[[Any], dict[str, Any]],
              nanos: Callable[[Any], Optional[int]]) -> dict[str, Any]:
    """``{"events": [...], "events_left_out": n}`` for a span whose events are ``raw`` (nothing when it has
    none). ``attributes_of`` reads one event's attributes (an OTLP key/value list or an object), ``nanos`` its
    time; ``dropped`` is the writer's own count of events it left out."""
    listed = raw if isinstance(raw, list) else []
    left_out = _count(dropped) + max(0, len(listed) - MAX_EVENTS)
    kept = listed if len(listed) <= MAX_EVENTS else listed[:HEAD_EVENTS] + listed[-TAIL_EVENTS:]
    found: dict[str, Any] = {}
    events = [_event(item, attributes_of, nanos) for item in kept if isinstance(item, dict)]
    if events:
        found["events"] = events
    if left_out:
        found["events_left_out"] = left_out
    return found


def _event(item: dict[str, Any], attributes_of: Callable[[Any], dict[str, Any]],
           nanos: Callable[[Any], Optional[int]]) -> dict[str, Any]:
    """One event as ``{"name", "time", "attributes"}``: OTLP's ``timeUnixNano`` or a flat ``time`` /
    ``timestamp`` (unix nanoseconds, None when absent or past 64 bits); attributes and values bounded."""
    name = item.get("name")
    time = next((item[key] for key in ("timeUnixNano", "time_unix_nano", "time", "timestamp") if key in item), None)
    pairs = item.get("attributes")
    total = len(pairs) if isinstance(pairs, (list, dict)) else 0
    if isinstance(pairs, list):
        pairs = pairs[:EVENT_ATTRIBUTES]
    elif isinstance(pairs, dict) and total > EVENT_ATTRIBUTES:
        pairs = dict(islice(pairs.items(), EVENT_ATTRIBUTES))
    attributes = capped(attributes_of(pairs) if pairs else {}, EVENT_VALUE_CHARS, EVENT_ATTRIBUTES)
    when = nanos(time)
    event: dict[str, Any] = {"name": short(name), "time": when if when is not None and 0 <= when < TIME_CAP else None,
                             "attributes": attributes}
    left_out = max(0, total - EVENT_ATTRIBUTES) + _count(item.get("droppedAttributesCount"))
    if left_out:
        event["attributes_left_out"] = left_out
    return event


def _count(value: Any) -> int:
    """A count within 0..2⁶³ from an int or a decimal string (OTLP writes 64-bit counts as either); 0 otherwise."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return min(max(0, value), TIME_CAP)
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 20:
        return min(int(value), TIME_CAP)
    return 0
