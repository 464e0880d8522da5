"""``TraceStore``: the read-only query API over a trace file and its sidecar index (the seeds' operations).

Every answer is plain JSON-able data, so the environment, the CLI and a REPL show the same thing. Queries read
only the index; ``view_trace``, ``view_spans`` and ``search_trace`` seek to a trace's byte ranges and read those
lines alone, never the rest of the file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterator, Optional

from rlm_host import InputError, truncate

from rlm_env_traces.index import TraceEntry, TraceIndex, load_or_build, open_trace_file
from rlm_env_traces.spans import MalformedLine, spans

#: ``view_trace`` answers at most this many characters; a larger trace gets a diagnostic instead.
VIEW_TRACE_CHARS = 150_000
#: ``view_spans`` cuts each attribute value to this many characters.
SPAN_ATTRIBUTE_CHARS = 16_384
SAMPLE_IDS = 5
SEARCH_MATCHES = 50
SNIPPET_CHARS = 240


class TraceStore:
    """Read-only queries over one trace file. ``TraceStore.load(path)`` builds or reuses its sidecar index."""

    def __init__(self, path: Path, index: TraceIndex, index_path: Path) -> None:
        self.path = path
        self.index = index
        self.index_path = index_path
        self._overview: Optional[dict[str, Any]] = None

    @classmethod
    def load(cls, trace_path: str | Path, cache_dir: Optional[Path] = None) -> "TraceStore":
        path = Path(trace_path).expanduser().resolve()
        index, index_path = load_or_build(path, cache_dir)
        return cls(path, index, index_path)

    # ------------------------------------------------------------------ the index alone

    def get_overview(self) -> dict[str, Any]:
        """Traces, spans, error traces, malformed lines, services, models, agents, tokens, sample trace ids."""
        if self._overview is None:
            traces = self.index.traces
            services, models, agents = Counter(), Counter(), Counter()
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
            }  # fmt: skip
        return self._overview

    def query_traces(self, has_errors: Optional[bool] = None, model: Optional[str] = None,
                     service: Optional[str] = None, agent: Optional[str] = None, limit: int = 20,
                     offset: int = 0) -> dict[str, Any]:  # fmt: skip
        """A page of trace summaries matching every filter given, in file order, with the total."""
        matching = list(self._matching(has_errors, model, service, agent))
        page = matching[max(0, offset): max(0, offset) + max(0, limit)]
        return {"total": len(matching), "offset": offset, "limit": limit,
                "traces": [self.summary(trace_id, entry) for trace_id, entry in page]}  # fmt: skip

    def count_traces(self, has_errors: Optional[bool] = None, model: Optional[str] = None,
                     service: Optional[str] = None, agent: Optional[str] = None) -> int:  # fmt: skip
        return sum(1 for _ in self._matching(has_errors, model, service, agent))

    def _matching(self, has_errors: Optional[bool], model: Optional[str], service: Optional[str],
                  agent: Optional[str]) -> Iterator[tuple[str, TraceEntry]]:  # fmt: skip
        rows = {row for row, names in enumerate(self.index.name_sets)
                if (not model or model in names.models) and (not service or service in names.services)
                and (not agent or agent in names.agents)}  # fmt: skip
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
                "output_tokens": entry.output_tokens, "start": entry.start, "duration_ms": duration}  # fmt: skip

    # ------------------------------------------------------------------ reading a trace's lines

    def trace_spans(self, trace_id: str) -> list[dict[str, Any]]:
        """The flat spans of one trace, read from its byte ranges only."""
        trace_id, entry = self._entry(trace_id)
        found = []
        with open_trace_file(self.path) as handle:
            for offset, length in entry.ranges:
                handle.seek(offset)
                for line in handle.read(length).splitlines():
                    try:
                        found += [span for span in spans(line) if span.get("trace_id") == trace_id]
                    except MalformedLine:
                        continue  # counted by the index already
        return found

    def view_trace(self, trace_id: str) -> dict[str, Any]:
        """All spans of a trace; past 150,000 characters, a diagnostic listing its spans instead of a cut."""
        found = self.trace_spans(trace_id)
        text = json.dumps(found, ensure_ascii=False, default=str)
        if len(text) <= VIEW_TRACE_CHARS:
            return {"trace_id": trace_id, "spans": found}
        listing = [{"span_id": s.get("span_id"), "name": s.get("name"), "status": (s.get("status") or {}).get("code"),
                    "chars": len(json.dumps(s, default=str))} for s in found]  # fmt: skip
        return {"trace_id": trace_id, "oversized": True, "chars": len(text), "limit": VIEW_TRACE_CHARS,
                "span_count": len(found), "spans": listing[:500],
                "hint": "view_spans with some span_ids, or search_trace with a pattern"}  # fmt: skip

    def view_spans(self, trace_id: str, span_ids: list[str]) -> dict[str, Any]:
        """The named spans of a trace, each attribute value cut to 16,384 characters; ids not found listed."""
        wanted = {str(span_id).lower() for span_id in span_ids}
        found = [_capped(span) for span in self.trace_spans(trace_id) if str(span.get("span_id", "")).lower() in wanted]
        missing = sorted(wanted - {str(span.get("span_id", "")).lower() for span in found})
        return {"trace_id": trace_id, "spans": found, "missing_span_ids": missing}

    def search_trace(self, trace_id: str, pattern: str, regex: bool = False) -> dict[str, Any]:
        """The spans of a trace whose JSON contains ``pattern`` (a substring, or a regex with ``regex=True``)."""
        try:
            matcher = re.compile(pattern if regex else re.escape(pattern), re.IGNORECASE)
        except re.error as exc:
            raise InputError(f"bad regex {pattern!r}: {exc}") from None
        matches = []
        for span in self.trace_spans(trace_id):
            text = json.dumps(span, ensure_ascii=False, default=str)
            hit = matcher.search(text)
            if hit:
                start = max(0, hit.start() - SNIPPET_CHARS // 2)
                matches.append({"span_id": span.get("span_id"), "name": span.get("name"),
                                "snippet": text[start: start + SNIPPET_CHARS]})  # fmt: skip
        return {"trace_id": trace_id, "pattern": pattern, "regex": regex, "match_count": len(matches),
                "matches": matches[:SEARCH_MATCHES]}  # fmt: skip

    def export_evidence_corpus(self, directory: str | Path, has_errors: Optional[bool] = None,
                               model: Optional[str] = None, service: Optional[str] = None,
                               agent: Optional[str] = None, limit: int = 200) -> dict[str, Any]:  # fmt: skip
        """Write ``traces.jsonl`` (the selected traces' spans) and ``summary.md`` into ``directory``."""
        from rlm_env_traces.evidence import write_corpus

        selected = list(self._matching(has_errors, model, service, agent))[: max(0, limit)]
        filters = {"has_errors": has_errors, "model": model, "service": service, "agent": agent}
        return write_corpus(self, Path(directory), selected, {k: v for k, v in filters.items() if v is not None})

    def _entry(self, trace_id: str) -> tuple[str, TraceEntry]:
        """The trace's id as indexed (OTLP's hex ids are lower-cased) and its entry; InputError if unknown."""
        for key in (str(trace_id), str(trace_id).lower()):
            if key in self.index.traces:
                return key, self.index.traces[key]
        raise InputError(f"no trace {trace_id!r} in {self.path.name}", hint="query_traces lists trace ids")


def _capped(span: dict[str, Any]) -> dict[str, Any]:
    attributes = span.get("attributes")
    if not isinstance(attributes, dict):
        return span
    capped = {key: truncate(value, SPAN_ATTRIBUTE_CHARS) if isinstance(value, str) else value
              for key, value in attributes.items()}  # fmt: skip
    return {**span, "attributes": capped}
