"""Sanity checks of a decoded index against the file it claims to describe: every count within bounds, every byte
range inside the file's data, in order and not overlapping. Run on every stored index before use, signed or not:
an index is data, and a view must never be sent outside the file or around it twice."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from rlm_env_traces.reader import GZIP_EXPANSION, GZIP_FLOOR_BYTES, MAX_TRACES

if TYPE_CHECKING:
    from rlm_env_traces.index import TraceIndex

#: The fewest bytes one span can take on a line (``{"traceId":""}``, a comma: with room to spare).
MIN_SPAN_BYTES = 8


def problems(index: "TraceIndex", size: int, compressed: bool) -> Optional[str]:
    """What is wrong with ``index`` for a file of ``size`` bytes, or None when it is sound."""
    data = index.data_size
    if compressed:
        if not 0 < data <= max(GZIP_FLOOR_BYTES, GZIP_EXPANSION * size):
            return f"decompressed size {data} out of bounds"
    elif data != size:
        return f"data size {data} is not the file's {size}"
    if not (0 <= index.malformed <= index.lines and 0 <= index.spans <= data // MIN_SPAN_BYTES + 1):
        return "line or span counts out of bounds"
    if not 0 < index.lines <= data + 1 or any(not 0 < n <= index.lines for n in index.malformed_lines):
        return "line numbers out of bounds"
    traces = index.traces
    if len(traces) > min(MAX_TRACES, max(index.spans, 0)) or len(index.name_sets) > max(len(traces), 1):
        return "more traces or name sets than spans"
    rows = len(index.name_sets)
    total = 0
    for entry in traces.values():
        spans, ranges = entry.spans, entry.ranges
        if not (0 <= entry.error_spans <= spans and 0 <= entry.names < rows and 0 < len(ranges) <= spans):
            return "a trace's counts are out of bounds"
        end = 0
        for offset, length in ranges:
            if offset < end or length <= 0:
                return "a trace's byte ranges overlap or are empty"
            end = offset + length
        if end > data:
            return "a byte range lies past the end of the file"
        total += spans
    return None if total == index.spans else "the traces' spans do not add up"
