"""``TraceStore``: the read-only query API over a trace file and its index (the seeds' operations).

Every answer is plain JSON-able data, so the environment, the CLI and a REPL show the same thing. Queries read
only the index; ``view_trace``, ``view_spans`` and ``search_trace`` seek to a trace's byte ranges and stream those
lines alone. Every answer has a size cap and every read a deadline, whatever the index or the file says: the
index is checked data, the file untrusted input, and the arguments come from a model.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

from rlm_host import InputError

from rlm_env_traces.index import TraceEntry, TraceIndex, load_or_build
from rlm_env_traces.matcher import compile_pattern
from rlm_env_traces.reader import GZIP_ERRORS, TraceLimitError, open_trace_file, range_lines, read_error
from rlm_env_traces.spans import MalformedLine, spans
from rlm_env_traces.views import (SPAN_ATTRIBUTE_CHARS, capped, dumps, fitted, shallow, short, status_of,
                                  trace_id_of)

__all__ = ["TraceStore", "VIEW_TRACE_CHARS", "SPAN_ATTRIBUTE_CHARS"]

#: ``view_trace`` answers at most this many characters; a larger trace gets a diagnostic instead.
VIEW_TRACE_CHARS = 150_000
#: ``view_spans``: span ids per call, characters per answer.
VIEW_SPANS_IDS = 200
VIEW_SPANS_CHARS = 300_000
#: Spans listed by an oversized ``view_trace``.
LISTED_SPANS = 500
#: Event names listed per span by an oversized ``view_trace``.
LISTED_EVENTS = 10
SAMPLE_IDS = 5
SEARCH_MATCHES = 50
SNIPPET_CHARS = 240
MAX_QUERY_LIMIT = 1_000
MAX_EXPORT_TRACES = 1_000
#: Time limits (seconds), each also bounded by the run's time left (``time_left``).
SEARCH_SECONDS = 10.0
READ_SECONDS = 60.0
EXPORT_SECONDS = 300.0


#: Characters a trace id prefix needs before it is looked up (shorter ones match too much to mean one trace).
MIN_PREFIX = 6


class TraceStore:
    """Read-only queries over one trace file. ``TraceStore.load(path)`` builds or reuses its index;
    ``time_left`` (seconds, e.g. the run's ``budget.remaining``) bounds every read's deadline."""

    def __init__(self, path: Path, index: TraceIndex, index_path: Optional[Path],
                 time_left: Optional[Callable[[], float]] = None) -> None:
        self.path = path
        self.index = index
        self.index_path = index_path
        self.time_left = time_left
        self._overview: Optional[dict[str, Any]] = None

    @classmethod
    def load(cls, trace_path: str | Path, cache_dir: Optional[Path] = None,
             time_left: Optional[Callable[[], float]] = None) -> "TraceStore":
        path = Path(trace_path).expanduser().resolve()
        index, index_path = load_or_build(path, cache_dir)
        return cls(path, index, index_path, time_left)

    # ------------------------------------------------------------------ the index alone

    def get_overview(self) -> dict[str, Any]:
        """Traces, spans, error traces, malformed lines, services, models, agents, tokens, sample trace ids."""
        if self._overview is None:
            traces = self.index.traces
            services, models, agents = Counter[str](), Counter[str](), Counter[str]()
            for row, count in Counter(entry.names for entry in traces.values()).items():
                names = self.index.name_sets[row]
                services.update(dict.fromkeys(names.services, count))
                models.update(dict.fromkeys(names.models, count))
                agents.update(dict.fromkeys(names.agents, count))
            errors = [trace_id for trace_id, entry in traces.items() if entry.has_errors]
            self._overview = {
                "trace_path": str(self.path), "traces": len(traces), "spans": self.index.spans,
                "error_traces": len(errors), "malformed_lines": self.index.malformed,
                "first_malformed_lines": self.index.malformed_lines,
                "services": dict(services.most_common()), "models": dict(models.most_common()),
                "agents": dict(agents.most_common()),
                "input_tokens": sum(e.input_tokens for e in traces.values()),
                "output_tokens": sum(e.output_tokens for e in traces.values()),
                "sample_trace_ids": list(traces)[:SAMPLE_IDS], "sample_error_trace_ids": errors[:SAMPLE_IDS],
            }
        return self._overview

    def query_traces(self, has_errors: Optional[bool] = None, model: Optional[str] = None,
                     service: Optional[str] = None, agent: Optional[str] = None, limit: int = 20,
                     offset: int = 0) -> dict[str, Any]:
        """A page of trace summaries matching every filter given, in file order, with the total."""
        matching = list(self._matching(has_errors, model, service, agent))
        limit, offset = min(max(0, int(limit)), MAX_QUERY_LIMIT), max(0, int(offset))
        page = matching[offset: offset + limit]
        return {"total": len(matching), "offset": offset, "limit": limit,
                "traces": [self.summary(trace_id, entry) for trace_id, entry in page]}

    def count_traces(self, has_errors: Optional[bool] = None, model: Optional[str] = None,
                     service: Optional[str] = None, agent: Optional[str] = None) -> int:
        return sum(1 for _ in self._matching(has_errors, model, service, agent))

    def _matching(self, has_errors: Optional[bool], model: Optional[str], service: Optional[str],
                  agent: Optional[str]) -> Iterator[tuple[str, TraceEntry]]:
        rows = {row for row, names in enumerate(self.index.name_sets)
                if (not model or model in names.models) and (not service or service in names.services)
                and (not agent or agent in names.agents)}
        for trace_id, entry in self.index.traces.items():
            if has_errors is not None and entry.has_errors != has_errors:
                continue
            if entry.names in rows:
                yield trace_id, entry

    def summary(self, trace_id: str, entry: TraceEntry) -> dict[str, Any]:
        """One trace's line in a listing."""
        names = self.index.names(entry)
        duration = (entry.end - entry.start) / 1e6 if entry.start is not None and entry.end is not None else None
        return {"trace_id": trace_id, "spans": entry.spans, "has_errors": entry.has_errors,
                "error_spans": entry.error_spans, "services": list(names.services), "models": list(names.models),
                "agents": list(names.agents), "input_tokens": entry.input_tokens,
                "output_tokens": entry.output_tokens, "start": entry.start, "duration_ms": duration}

    # ------------------------------------------------------------------ reading a trace's lines

    def iter_spans(self, trace_id: str, deadline: Optional[float] = None) -> Iterator[dict[str, Any]]:
        """The flat spans of one trace, streamed from its byte ranges only, no line past the line limit and none
        after ``deadline`` (a ``time.monotonic()`` value: past it, a TraceLimitError)."""
        key, entry = self._entry(trace_id)
        deadline = self._deadline(READ_SECONDS) if deadline is None else deadline
        try:
            with open_trace_file(self.path) as handle:
                for offset, length in entry.ranges:
                    for line in range_lines(handle, offset, length, self.index.data_size):
                        if time.monotonic() > deadline:
                            raise TraceLimitError(f"reading trace {short(key)} went past its time limit")
                        try:
                            found = spans(line)
                        except MalformedLine:
                            continue  # counted by the index already
                        yield from (span for span in found if trace_id_of(span) == key)
        except (OSError, *GZIP_ERRORS) as exc:
            raise read_error(self.path, exc) from None

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        """The flat spans of one trace as a list (``iter_spans``, for a trace known to be small)."""
        return list(self.iter_spans(trace_id))

    def view_trace(self, trace_id: str) -> dict[str, Any]:
        """All spans of a trace; past 150,000 characters, a diagnostic listing its spans instead of a cut."""
        key, _ = self._entry(trace_id)
        kept: Optional[list[dict[str, Any]]] = []
        listing: list[dict[str, Any]] = []
        chars = count = 0
        for span in self.iter_spans(key):
            text = dumps(span)
            count, chars = count + 1, chars + len(text) + 2
            if kept is not None and chars <= VIEW_TRACE_CHARS:
                kept.append(span if shallow(text) else capped(span, None))
            else:
                kept = None
            if len(listing) < LISTED_SPANS:
                listing.append({"span_id": short(span.get("span_id")), "name": short(span.get("name")),
                                "kind": short(span.get("kind")), "status": short(status_of(span).get("code")),
                                "events": _event_names(span), "chars": len(text)})
        if kept is not None:
            return {"trace_id": key, "spans": kept}
        return {"trace_id": key, "oversized": True, "chars": chars, "limit": VIEW_TRACE_CHARS, "span_count": count,
                "spans": listing, "hint": "view_spans with some span_ids, or search_trace with a pattern"}

    def view_spans(self, trace_id: str, span_ids: list[str]) -> dict[str, Any]:
        """The named spans of a trace, each attribute value cut to 16,384 characters (less when they would not
        fit), 300,000 characters in all; ids not found listed, spans that did not fit named."""
        if len(span_ids) > VIEW_SPANS_IDS:
            raise InputError(f"{len(span_ids):,} span ids asked for; at most {VIEW_SPANS_IDS} per call")
        wanted = {str(span_id).lower() for span_id in span_ids}
        key, _ = self._entry(trace_id)
        found: list[dict[str, Any]] = []
        seen: set[str] = set()
        omitted: list[str] = []
        room = VIEW_SPANS_CHARS
        for span in self.iter_spans(key):
            span_id = str(span.get("span_id", "")).lower()
            if span_id not in wanted:
                continue
            seen.add(span_id)
            shown = fitted(span, room)
            if shown is None:
                omitted.append(span_id)
                continue
            found.append(shown[0])
            room -= shown[1]
        result = {"trace_id": key, "spans": found, "missing_span_ids": sorted(wanted - seen)}
        if omitted:
            result.update(omitted_span_ids=omitted, hint="too large to show together: ask for fewer spans")
        return result

    def search_trace(self, trace_id: str, pattern: str, regex: bool = False,
                     timeout: Optional[float] = None) -> dict[str, Any]:
        """The spans of a trace whose JSON contains ``pattern`` (a substring, or an RE2 regex with ``regex=True``),
        case-insensitive, within ``timeout`` seconds (at most ``SEARCH_SECONDS``, and the run's time left)."""
        search = compile_pattern(str(pattern), bool(regex))
        key, _ = self._entry(trace_id)
        seconds = SEARCH_SECONDS if timeout is None else max(0.0, min(SEARCH_SECONDS, timeout))
        started, deadline = time.monotonic(), self._deadline(seconds)
        matches: list[dict[str, Any]] = []
        searched = count = 0
        try:
            for span in self.iter_spans(key, deadline):
                text = dumps(span)
                hit = search(text, deadline - time.monotonic())
                searched += 1
                if hit is not None:
                    count += 1
                    if len(matches) < SEARCH_MATCHES:
                        start = max(0, hit[0] - SNIPPET_CHARS // 2)
                        matches.append({"span_id": short(span.get("span_id")), "name": short(span.get("name")),
                                        "kind": short(span.get("kind")),
                                        "snippet": text[start: start + SNIPPET_CHARS]})
                if time.monotonic() > deadline:
                    raise TraceLimitError("its deadline passed")
        except TraceLimitError as exc:
            raise TraceLimitError(f"search_trace stopped at its time limit after {time.monotonic() - started:.1f}s "
                                  f"({exc}): {searched} spans searched, {count} matched so far",
                                  hint="search for a plain substring, or a narrower pattern") from None
        return {"trace_id": key, "pattern": pattern, "regex": regex, "match_count": count, "matches": matches}

    def export_evidence_corpus(self, directory: str | Path, has_errors: Optional[bool] = None,
                               model: Optional[str] = None, service: Optional[str] = None,
                               agent: Optional[str] = None, limit: int = 200) -> dict[str, Any]:
        """Write ``traces.jsonl`` (the selected traces' spans) and ``summary.md`` into ``directory``: a new folder,
        or an existing empty one (``evidence.write_corpus``)."""
        from rlm_env_traces.evidence import write_corpus

        limit = min(max(0, int(limit)), MAX_EXPORT_TRACES)
        selected = list(self._matching(has_errors, model, service, agent))[:limit]
        filters = {"has_errors": has_errors, "model": model, "service": service, "agent": agent}
        return write_corpus(self, Path(directory), selected, {k: v for k, v in filters.items() if v is not None},
                            self._deadline(EXPORT_SECONDS))

    def _deadline(self, seconds: float) -> float:
        """A ``time.monotonic()`` deadline ``seconds`` away, sooner when the run has less time left."""
        left = self.time_left() if self.time_left is not None else seconds
        return time.monotonic() + max(0.0, min(seconds, left))

    def _entry(self, trace_id: str) -> tuple[str, TraceEntry]:
        """The trace's id as indexed (OTLP's hex ids are lower-cased), or the one id a prefix of at least
        :data:`MIN_PREFIX` characters starts (as ``rlm runs show`` takes run ids); InputError if none or several."""
        hint = "`rlm traces query FILE` lists the trace ids (the query_traces action in a run)"
        for key in (str(trace_id), str(trace_id).lower()):
            if key in self.index.traces:
                return key, self.index.traces[key]
        prefix = str(trace_id).lower()
        matches = ([key for key in self.index.traces if key.lower().startswith(prefix)]
                   if len(prefix) >= MIN_PREFIX else [])
        if len(matches) == 1:
            return matches[0], self.index.traces[matches[0]]
        if len(matches) > 1:
            shown = ", ".join(str(short(key)) for key in matches[:5]) + (", …" if len(matches) > 5 else "")
            raise InputError(f"trace id prefix {short(trace_id)!r} matches {len(matches)} traces: {shown}",
                             hint="give more characters of the id")
        raise InputError(f"no trace {short(trace_id)!r} in {self.path.name}", hint=hint)


def _event_names(span: dict[str, Any]) -> list[str]:
    """The names of a span's events, for a listing (at most ``LISTED_EVENTS``, then how many more)."""
    events = got if isinstance(got := span.get("events"), list) else []
    names = [short(event.get("name")) or "" for event in events[:LISTED_EVENTS] if isinstance(event, dict)]
    left_out = span.get("events_left_out")
    more = max(0, len(events) - LISTED_EVENTS) + (left_out if type(left_out) is int and left_out > 0 else 0)
    return names + [f"… {more} more"] if more > 0 else names
