"""The evidence corpus: the selected traces' spans as JSON Lines and a Markdown summary, for downstream agents.

The summary groups what recurs — error messages and failing span names with the traces they occur in — since a
systemic failure mode is one that shows up across traces, and every claim carries its trace and span ids.

The corpus goes into a new folder (or an existing empty one), never beside other files: both files are created
with ``O_EXCL|O_NOFOLLOW`` (``safefiles``), so neither a planted link nor an input named ``traces.jsonl`` is ever
written through or truncated. Ids and names come from the trace file, so they are encoded before they become
Markdown (a newline in a trace id cannot add a line, a ``|`` cannot add a cell); no file is named after one.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

from rlm_env_traces.index import TraceEntry
from rlm_env_traces.reader import TraceLimitError
from rlm_env_traces.safefiles import create_file, open_new_folder
from rlm_env_traces.spans import is_error
from rlm_env_traces.store import TraceStore
from rlm_env_traces.views import dumps, status_of

PATTERNS_LISTED = 20
IDS_PER_PATTERN = 5
CELL_CHARS = 200
FILES = ("summary.md", "traces.jsonl")


def write_corpus(store: TraceStore, directory: Path, selected: list[tuple[str, TraceEntry]],
                 filters: dict[str, Any], deadline: float) -> dict[str, Any]:
    """Write ``traces.jsonl`` and ``summary.md`` into ``directory`` (new, or existing and empty; InputError
    otherwise) before ``deadline``; return what was written."""
    folder = open_new_folder(directory)
    try:
        failures: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # (span name, message) → ids
        with create_file(folder, "traces.jsonl") as out:
            for number, (trace_id, _) in enumerate(selected):
                try:
                    for span in store.iter_spans(trace_id, deadline):
                        out.write(dumps(span) + "\n")  # JSON: a newline inside a value stays escaped
                        status = status_of(span)
                        if is_error(status.get("code")):
                            key = (str(span.get("name"))[:CELL_CHARS], str(status.get("message") or "")[:CELL_CHARS])
                            failures[key].append((trace_id, str(span.get("span_id"))[:CELL_CHARS]))
                except TraceLimitError:
                    raise TraceLimitError(f"export stopped at its time limit after {number} of {len(selected)} "
                                          f"traces; {directory} holds a partial corpus",
                                          hint="export fewer traces (filters, limit)") from None
        with create_file(folder, "summary.md") as out:
            out.write(_markdown(store, selected, filters, failures))
    finally:
        os.close(folder)
    return {"directory": str(directory), "traces": len(selected), "files": list(FILES),
            "failure_patterns": len(failures)}


def cell(value: Any) -> str:
    """Text from a trace file as one Markdown table cell: control characters (newlines) escaped as in JSON,
    ``|`` and backticks escaped, cut to ``CELL_CHARS``."""
    text = json.dumps(str(value)[:CELL_CHARS], ensure_ascii=False)[1:-1]
    return text.replace("|", "\\|").replace("`", "\\u0060")


def _markdown(store: TraceStore, selected: list[tuple[str, TraceEntry]], filters: dict[str, Any],
              failures: dict[tuple[str, str], list[tuple[str, str]]]) -> str:
    overview = store.get_overview()
    lines = [f"# Evidence corpus: {cell(store.path.name)}", "",
             f"{len(selected)} traces selected of {overview['traces']} ({overview['error_traces']} with errors); "
             f"filters: {cell(json.dumps(filters)) if filters else 'none'}.", "",
             "## Recurring failures", "", "| span | message | spans | traces | evidence (trace / span) |",
             "| --- | --- | --- | --- | --- |"]
    ranked = sorted(failures.items(), key=lambda item: -len({t for t, _ in item[1]}))[:PATTERNS_LISTED]
    for (name, message), ids in ranked:
        evidence = "; ".join(f"`{cell(t)}` / `{cell(s)}`" for t, s in ids[:IDS_PER_PATTERN])
        lines.append(f"| {cell(name)} | {cell(message)} | {len(ids)} | {len({t for t, _ in ids})} | {evidence} |")
    lines += ["", "## Traces", "", "| trace | spans | errors | services | models | agents | tokens in/out |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for trace_id, entry in selected:
        row = store.summary(trace_id, entry)
        names = (cell(", ".join(row[column])) for column in ("services", "models", "agents"))
        lines.append(f"| `{cell(trace_id)}` | {row['spans']} | {row['error_spans']} | {' | '.join(names)} | "
                     f"{row['input_tokens']}/{row['output_tokens']} |")
    return "\n".join(lines) + "\n"
