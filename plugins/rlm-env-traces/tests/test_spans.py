"""The reader's field handling: both formats, status codes, timestamps, odd value types, blank and bad lines."""

import json

import pytest

from rlm_env_traces.spans import MalformedLine, is_error, spans, summaries


def line(value):
    return json.dumps(value).encode() + b"\n"


def test_a_flat_span_and_its_otlp_twin_summarise_alike():
    flat = {"trace_id": "ab", "span_id": "01", "status": {"code": "ERROR"}, "start_time": "2026-01-01T00:00:00Z",
            "end_time": 1_767_225_601_000_000_000, "resource": {"service.name": "svc"},
            "attributes": {"gen_ai.response.model": "m", "gen_ai.agent.name": "a", "gen_ai.usage.input_tokens": 5}}
    otlp = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
            "scopeSpans": [{"spans": [{"traceId": "AB", "spanId": "01", "status": {"code": 2},
                                       "startTimeUnixNano": "1767225600000000000",
                                       "endTimeUnixNano": "1767225601000000000",
                                       "attributes": [{"key": "gen_ai.response.model", "value": {"stringValue": "m"}},
                                                      {"key": "gen_ai.agent.name", "value": {"stringValue": "a"}},
                                                      {"key": "gen_ai.usage.input_tokens",
                                                       "value": {"intValue": "5"}}]}]}]}]}
    expected = ("ab", True, "svc", "m", "a", 5, 0, 1_767_225_600_000_000_000, 1_767_225_601_000_000_000)
    assert tuple(summaries(line(flat))[0]) == expected == tuple(summaries(line(otlp))[0])
    (converted,) = spans(line(otlp))
    assert converted["status"] == {"code": "ERROR", "message": ""}
    assert converted["attributes"]["gen_ai.usage.input_tokens"] == 5


def test_unexpected_value_types_take_the_general_path():
    odd = {"trace_id": "t", "status": {"code": "error"}, "attributes": {"gen_ai.request.model": 7,
                                                                      "gen_ai.usage.output_tokens": "12"}}
    (summary,) = summaries(line(odd))
    assert summary.model == "7" and summary.output_tokens == 12 and summary.error


@pytest.mark.parametrize(("code", "error"), [(2, True), (1, False), (0, False), ("STATUS_CODE_ERROR", True),
                                              ("Error", True), ("OK", False), (None, False),
                                              (["x"], False)])
def test_status_codes(code, error):
    assert is_error(code) is error


def test_blank_lines_hold_nothing_and_bad_lines_are_malformed():
    assert summaries(b"  \n") == []
    for bad in (b"{not json\n", b'{"name": "no trace id"}\n', b"[1, 2]\n", b'{"trace_id": "\x80"}\n',
                b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "a\xff"}]}]}]}\n'):  # not UTF-8
        with pytest.raises(MalformedLine):
            summaries(bad)
        with pytest.raises(MalformedLine):
            spans(bad)
