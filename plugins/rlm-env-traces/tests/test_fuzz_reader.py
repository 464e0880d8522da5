"""A property-based pass over the trace reader and index with small malformed inputs: random bytes, valid lines
truncated, mutated and spliced, gzip noise and cut gzip streams, stored indexes flipped. Every input ends in data,
a clean InputError (a TraceLimitError included) or nothing, within a deadline; never another exception."""

import gzip
import json
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlm_env_traces.index import sidecar_path
from rlm_env_traces.store import TraceStore
from rlm_host import InputError

SPAN = {"trace_id": "abc", "span_id": "s1", "parent_span_id": None, "name": "chat m", "start_time": 1,
        "end_time": "2026-01-01T00:00:00Z", "status": {"code": "ERROR", "message": "boom"}, "kind": "client",
        "attributes": {"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": 3}, "resource": {"service.name": "s"},
        "events": [{"name": "exception", "time": 2, "attributes": {"exception.message": "boom"}}]}
OTLP = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
        "scopeSpans": [{"spans": [{"traceId": "AB", "spanId": "01", "status": {"code": 2}, "startTimeUnixNano": "5",
                                   "kind": 3, "droppedEventsCount": 1,
                                   "attributes": [{"key": "gen_ai.agent.name", "value": {"stringValue": "a"}}],
                                   "events": [{"timeUnixNano": "6", "name": "rlm.code", "attributes": [
                                       {"key": "rlm.text", "value": {"stringValue": "print(1)"}}]}]}]}]}]}
INSERTS = [b"[", b"{", b"\n", b'"', b"\\", b"\xff", b"1e999", b"-", b"null", b"9" * 30]
VALID = [json.dumps(SPAN).encode(), json.dumps(OTLP).encode(), json.dumps({**SPAN, "trace_id": "x2"}).encode()]
FUZZ = settings(max_examples=60, deadline=3000, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@st.composite
def mutated_line(draw):
    line = bytearray(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(0, 4))):
        where = draw(st.integers(0, len(line)))
        kind = draw(st.sampled_from(["cut", "flip", "insert", "delete"]))
        if kind == "cut":
            del line[where:]
        elif kind == "flip" and where < len(line):
            line[where] = draw(st.integers(0, 255))
        elif kind == "insert":
            line[where:where] = draw(st.sampled_from(INSERTS))
        elif where < len(line):
            del line[where]
    return bytes(line)


trace_bytes = st.one_of(
    st.binary(max_size=600),
    st.lists(st.one_of(mutated_line(), st.sampled_from(VALID), st.binary(max_size=40)), min_size=1, max_size=8)
    .map(lambda lines: b"\n".join(lines) + b"\n"),
)


@st.composite
def trace_file(draw):
    """A file's bytes: plain, gzip, a gzip cut short, or gzip noise."""
    body = draw(trace_bytes)
    shape = draw(st.sampled_from(["plain", "plain", "gzip", "cut gzip", "gzip noise"]))
    if shape == "gzip":
        return gzip.compress(body)
    if shape == "cut gzip":
        packed = gzip.compress(body)
        return packed[: draw(st.integers(1, len(packed)))]
    if shape == "gzip noise":
        return b"\x1f\x8b" + draw(st.binary(max_size=200))
    return body


def exercise(path: Path, pattern: str, regex: bool) -> None:
    """Load, query, view and search every trace; anything but data or an InputError fails the test."""
    try:
        store = TraceStore.load(path)
    except InputError:
        return
    overview = store.get_overview()
    assert overview["traces"] == len(store.index.traces) and json.dumps(overview)
    for trace_id in list(store.index.traces)[:4]:
        for call in (lambda: store.view_trace(trace_id), lambda: store.view_spans(trace_id, ["s1", "01"]),
                     lambda: store.search_trace(trace_id, pattern, regex=regex)):
            try:
                json.dumps(call())
            except InputError:
                pass
    assert TraceStore.load(path).index == store.index, "the stored index reloads as built"


@FUZZ
@given(data=trace_file(), pattern=st.text(max_size=12), regex=st.booleans())
def test_any_small_file_ends_in_data_or_a_clean_error(data, pattern, regex):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(data)
        started = time.monotonic()
        exercise(path, pattern, regex)
        assert time.monotonic() - started < 2


@FUZZ
@given(body=st.lists(st.sampled_from(VALID), min_size=1, max_size=5), flips=st.lists(
    st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=6))
def test_a_damaged_stored_index_is_rebuilt_not_trusted(body, flips):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.jsonl"
        path.write_bytes(b"\n".join(body) + b"\n")
        honest = TraceStore.load(path).index
        stored = bytearray(sidecar_path(path).read_bytes())
        for where, value in flips:
            stored[where % len(stored)] = value
        sidecar_path(path).write_bytes(bytes(stored))
        assert TraceStore.load(path).index == honest
