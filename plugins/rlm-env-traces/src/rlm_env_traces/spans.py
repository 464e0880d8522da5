"""Every field of a trace line, in one place: the two formats a line may take and what the index keeps of a span.

A line is one flat span (``trace_id``, ``span_id``, ``status: {"code": "ERROR"}``, ``attributes`` as an object…)
or one OTLP-JSON export batch (``{"resourceSpans": [...]}``: hex ids, key/value attribute lists, status codes
0/1/2). ``summaries`` reads a line for the index through typed msgspec schemas that skip every other field (the
fast path of a 1 GB index build), falling back to ``spans`` for a line whose values have unexpected types;
``spans`` turns a line into flat span dicts for viewing, each span's kind as a name and its events bounded
(``events``). A new source of spans (rlm's own OpenTelemetry sink) means teaching this module (and ``events``,
for what happens inside a span) its shape, and nothing else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple, Optional, Union

import msgspec

from rlm_env_traces.events import events_of, kind_name
# The OpenTelemetry GenAI semantic conventions the index summarises.
MODEL_KEYS = ("gen_ai.request.model", "gen_ai.response.model")
AGENT_KEY = "gen_ai.agent.name"
INPUT_TOKENS_KEY = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS_KEY = "gen_ai.usage.output_tokens"
SERVICE_KEY = "service.name"
OTLP_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KNOWN_CODES = {None: False, 0: False, 1: False, 2: True, "UNSET": False, "OK": False, "ERROR": True,
                "STATUS_CODE_UNSET": False, "STATUS_CODE_OK": False, "STATUS_CODE_ERROR": True}

Scalar = Union[int, float, str, None]


class SpanSummary(NamedTuple):
    """What the index keeps of one span."""

    trace_id: str
    error: bool
    service: Optional[str]
    model: Optional[str]
    agent: Optional[str]
    input_tokens: int
    output_tokens: int
    start: Optional[int]  # unix nanoseconds
    end: Optional[int]


def _summary(fields: tuple[Any, ...]) -> SpanSummary:
    return tuple.__new__(SpanSummary, fields)  # NamedTuple's own __new__ is Python code: too slow per span


class _Status(msgspec.Struct):
    code: Union[int, str, None] = None


class _GenAI(msgspec.Struct):
    request_model: Optional[str] = msgspec.field(default=None, name=MODEL_KEYS[0])
    response_model: Optional[str] = msgspec.field(default=None, name=MODEL_KEYS[1])
    agent: Optional[str] = msgspec.field(default=None, name=AGENT_KEY)
    input_tokens: Scalar = msgspec.field(default=None, name=INPUT_TOKENS_KEY)
    output_tokens: Scalar = msgspec.field(default=None, name=OUTPUT_TOKENS_KEY)


class _FlatResource(msgspec.Struct):
    service: Optional[str] = msgspec.field(default=None, name=SERVICE_KEY)


class _AnyValue(msgspec.Struct):
    stringValue: Optional[str] = None
    intValue: Union[int, str, None] = None


class _KeyValue(msgspec.Struct):
    key: str
    value: Optional[_AnyValue] = None


class _OtlpSpan(msgspec.Struct):
    traceId: str = ""
    startTimeUnixNano: Union[int, str, None] = None
    endTimeUnixNano: Union[int, str, None] = None
    status: Optional[_Status] = None
    attributes: list[_KeyValue] = []


class _ScopeSpans(msgspec.Struct):
    spans: list[_OtlpSpan] = []


class _OtlpResource(msgspec.Struct):
    attributes: list[_KeyValue] = []


class _ResourceSpans(msgspec.Struct):
    resource: Optional[_OtlpResource] = None
    scopeSpans: list[_ScopeSpans] = []


class _Line(msgspec.Struct):
    """Both formats at once: a flat span's fields, or an OTLP batch's ``resourceSpans``."""

    trace_id: Optional[str] = None
    start_time: Union[int, str, None] = None
    end_time: Union[int, str, None] = None
    status: Optional[_Status] = None
    attributes: Optional[_GenAI] = None
    resource: Optional[_FlatResource] = None
    resourceSpans: Optional[list[_ResourceSpans]] = None


_line_decoder = msgspec.json.Decoder(_Line)
_any_decoder = msgspec.json.Decoder()


class MalformedLine(ValueError):
    """A line that is not JSON, or JSON that is neither a span nor an OTLP batch."""


def summaries(line: bytes) -> list[SpanSummary]:
    """The index's view of every span on ``line``; MalformedLine when it holds none."""
    try:
        parsed = _line_decoder.decode(line)
    except msgspec.ValidationError:  # unexpected value types: take the general path
        return [_summary_of(span) for span in spans(line)]
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # bytes that are not UTF-8 inside a string too
        if not line.strip():  # a blank line holds nothing, and is no error (checked only here: it costs a copy)
            return []
        raise MalformedLine(str(exc)) from None
    except RecursionError:
        raise MalformedLine("nested too deeply") from None
    if parsed.resourceSpans is not None:
        return [summary for group in parsed.resourceSpans for summary in _otlp_summaries(group)]
    if not parsed.trace_id:
        raise MalformedLine("neither a span with a trace_id nor an OTLP batch")
    attrs = parsed.attributes or _GenAI()
    return [_summary((parsed.trace_id, is_error(parsed.status.code if parsed.status else None),
                        parsed.resource.service if parsed.resource else None,
                        attrs.request_model or attrs.response_model, attrs.agent,
                        _int(attrs.input_tokens), _int(attrs.output_tokens),
                        _nanos(parsed.start_time), _nanos(parsed.end_time)))]


def _otlp_summaries(group: _ResourceSpans) -> list[SpanSummary]:
    resource = _typed_attributes(group.resource.attributes if group.resource else [])
    service = resource.get(SERVICE_KEY)
    found = []
    for scope in group.scopeSpans:
        for span in scope.spans:
            attrs = _typed_attributes(span.attributes)
            found.append(_summary((span.traceId.lower(), is_error(span.status.code if span.status else None),
                                     service, attrs.get(MODEL_KEYS[0]) or attrs.get(MODEL_KEYS[1]),
                                     attrs.get(AGENT_KEY), _int(attrs.get(INPUT_TOKENS_KEY)),
                                     _int(attrs.get(OUTPUT_TOKENS_KEY)), _nanos(span.startTimeUnixNano),
                                     _nanos(span.endTimeUnixNano))))
    return found


def _typed_attributes(pairs: list[_KeyValue]) -> dict[str, Any]:
    return {kv.key: (kv.value.stringValue if kv.value.stringValue is not None else kv.value.intValue)
            for kv in pairs if kv.value is not None}


def spans(line: bytes) -> list[dict[str, Any]]:
    """Every span on ``line`` as a flat span dict (OTLP batches converted); MalformedLine when it holds none."""
    try:
        value = _any_decoder.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # bytes that are not UTF-8 inside a string too
        raise MalformedLine(str(exc)) from None
    except RecursionError:
        raise MalformedLine("nested too deeply") from None
    try:
        if isinstance(value, dict) and isinstance(value.get("resourceSpans"), list):
            return [flat for group in value["resourceSpans"] if isinstance(group, dict)
                    for flat in _flatten_otlp(group)]
        if isinstance(value, dict) and value.get("trace_id"):
            return [_flat_span(value)]
    except RecursionError:  # key/value lists nested past Python's stack, though not past the decoder's
        raise MalformedLine("nested too deeply") from None
    raise MalformedLine("neither a span with a trace_id nor an OTLP batch")


def _flat_span(span: dict[str, Any]) -> dict[str, Any]:
    """A flat span as written, its ``kind`` made a name and its ``events`` bounded (``events``)."""
    if "kind" in span:
        span["kind"] = kind_name(span["kind"])  # in its place: a view shows it where the file had it
        if span["kind"] is None:
            del span["kind"]
    if "events" in span or "dropped_events_count" in span:
        raw = span.pop("events", None)
        span.update(events_of(raw, span.pop("dropped_events_count", None), _event_attributes, _nanos))
    return span


def _flatten_otlp(group: dict[str, Any]) -> list[dict[str, Any]]:
    resource = _attribute_dict((group.get("resource") or {}).get("attributes") or [])
    flat = []
    for scope in group.get("scopeSpans") or []:
        for span in scope.get("spans") or []:
            status = span.get("status") or {}
            converted = {
                "trace_id": str(span.get("traceId", "")).lower(), "span_id": str(span.get("spanId", "")).lower(),
                "parent_span_id": str(span.get("parentSpanId") or "").lower() or None, "name": span.get("name"),
                "kind": kind_name(span.get("kind")), "start_time": _nanos(span.get("startTimeUnixNano")),
                "end_time": _nanos(span.get("endTimeUnixNano")),
                "status": {"code": OTLP_STATUS.get(status.get("code", 0), "UNSET"),
                           "message": status.get("message", "")},
                "attributes": _attribute_dict(span.get("attributes") or []), "resource": resource,
                "scope": (scope.get("scope") or {}).get("name"),
            }
            if converted["kind"] is None:  # SPAN_KIND_UNSPECIFIED, or none given
                del converted["kind"]
            converted.update(events_of(span.get("events"), span.get("droppedEventsCount"), _event_attributes, _nanos))
            flat.append(converted)
    return flat


def _event_attributes(value: Any) -> dict[str, Any]:
    """An event's attributes: OTLP's key/value list, or a flat span's object."""
    if isinstance(value, dict):
        return value
    return _attribute_dict(value) if isinstance(value, list) else {}


def _attribute_dict(pairs: list[Any]) -> dict[str, Any]:
    return {pair["key"]: _any_value(pair.get("value") or {})
            for pair in pairs if isinstance(pair, dict) and "key" in pair}


def _any_value(value: dict[str, Any]) -> Any:
    """An OTLP AnyValue as a plain value (arrays and key/value lists included)."""
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return _attribute_dict((value["kvlistValue"] or {}).get("values", []))
    if "intValue" in value:
        return _int(value["intValue"])
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    return None


def _summary_of(span: dict[str, Any]) -> SpanSummary:
    attrs = got if isinstance(got := span.get("attributes"), dict) else {}
    resource = got if isinstance(got := span.get("resource"), dict) else {}
    status = got if isinstance(got := span.get("status"), dict) else {}
    return _summary((str(span["trace_id"]), is_error(status.get("code")), _text(resource.get(SERVICE_KEY)),
                       _text(attrs.get(MODEL_KEYS[0]) or attrs.get(MODEL_KEYS[1])), _text(attrs.get(AGENT_KEY)),
                       _int(attrs.get(INPUT_TOKENS_KEY)), _int(attrs.get(OUTPUT_TOKENS_KEY)),
                       _nanos(span.get("start_time")), _nanos(span.get("end_time"))))


def is_error(code: Any) -> bool:
    """ERROR in either format: OTLP's 2, or ``"ERROR"`` / ``"STATUS_CODE_ERROR"`` (any case)."""
    try:
        known = _KNOWN_CODES.get(code)
    except TypeError:  # unhashable: no status code at all
        return False
    return known if known is not None else (isinstance(code, str) and code.upper().endswith("ERROR"))


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _int(value: Any) -> int:
    if type(value) is int:
        return value
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError, OverflowError):
        return 0


def _nanos(value: Any) -> Optional[int]:
    """Unix nanoseconds from an integer, a decimal string (OTLP) or an ISO 8601 timestamp; None when there is
    none. (The index keeps those that fit 64 bits: ``index._finished``.)"""
    if type(value) is int:  # the common case first: this runs twice per span of a 1 GB index build
        return value
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, (int, float)):
            found = int(value)
        else:
            text = str(value).strip()[:64]
            found = int(text) if text.isdigit() else int(datetime.fromisoformat(text.replace("Z", "+00:00"))
                                                          .timestamp() * 1_000_000_000)
    except (ValueError, OverflowError, TypeError):
        return None
    return found
