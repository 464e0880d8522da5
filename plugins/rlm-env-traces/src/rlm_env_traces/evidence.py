"""The evidence corpus: the selected traces' spans as JSON Lines and a Markdown summary, for downstream agents.

The summary groups what recurs — error messages and failing span names with the traces they occur in — since a
systemic failure mode is one that shows up across traces, and every claim carries its trace and span ids.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from rlm_env_traces.index import TraceEntry
from rlm_env_traces.spans import is_error
from rlm_env_traces.store import TraceStore

PATTERNS_LISTED = 20
IDS_PER_PATTERN = 5


def write_corpus(store: TraceStore, directory: Path, selected: list[tuple[str, TraceEntry]],
                 filters: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Write ``traces.jsonl`` and ``summary.md`` under ``directory``; return what was written."""
    directory.mkdir(parents=True, exist_ok=True)
    failures: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)  # (span name, message) → ids
    with (directory / "traces.jsonl").open("w", encoding="utf-8") as out:
        for trace_id, _ in selected:
            for span in store.trace_spans(trace_id):
                out.write(json.dumps(span, ensure_ascii=False, default=str) + "\n")
                status = span.get("status") or {}
                if is_error(status.get("code")):
                    key = (str(span.get("name")), str(status.get("message") or "")[:200])
                    failures[key].append((trace_id, str(span.get("span_id"))))
    (directory / "summary.md").write_text(_markdown(store, selected, filters, failures), encoding="utf-8")
    return {"directory": str(directory), "traces": len(selected), "files": ["summary.md", "traces.jsonl"],
            "failure_patterns": len(failures)}  # fmt: skip


def _markdown(store: TraceStore, selected: list[tuple[str, TraceEntry]], filters: dict[str, Any],
              failures: dict[tuple[str, str], list[tuple[str, str]]]) -> str:  # fmt: skip
    overview = store.get_overview()
    lines = [f"# Evidence corpus: {store.path.name}", "",
             f"{len(selected)} traces selected of {overview['traces']} ({overview['error_traces']} with errors); "
             f"filters: {json.dumps(filters) if filters else 'none'}.", "",
             "## Recurring failures", "", "| span | message | spans | traces | evidence (trace / span) |",
             "| --- | --- | --- | --- | --- |"]  # fmt: skip
    ranked = sorted(failures.items(), key=lambda item: -len({t for t, _ in item[1]}))[:PATTERNS_LISTED]
    for (name, message), ids in ranked:
        evidence = "; ".join(f"`{t}` / `{s}`" for t, s in ids[:IDS_PER_PATTERN])
        lines.append(f"| {name} | {message.replace('|', '/')} | {len(ids)} | {len({t for t, _ in ids})} | {evidence} |")
    lines += ["", "## Traces", "", "| trace | spans | errors | services | models | agents | tokens in/out |",
              "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for trace_id, entry in selected:
        row = store.summary(trace_id, entry)
        lines.append(f"| `{trace_id}` | {row['spans']} | {row['error_spans']} | {', '.join(row['services'])} | "
                     f"{', '.join(row['models'])} | {', '.join(row['agents'])} | "
                     f"{row['input_tokens']}/{row['output_tokens']} |")  # fmt: skip
    return "\n".join(lines) + "\n"
