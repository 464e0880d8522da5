"""``rlm traces …``: the TraceStore's operations on the command line; rich tables, or ``--json`` for scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

app = typer.Typer(help="Index, query, view, search and export OpenTelemetry trace files.", rich_markup_mode=None,
                  no_args_is_help=True)  # fmt: skip

PATH = typer.Argument(..., help="A JSON Lines trace file (flat spans or OTLP-JSON batches; .gz too).")
AS_JSON = typer.Option(False, "--json", help="Print JSON.")
ERRORS = typer.Option(None, "--errors/--no-errors", help="Only traces with (or without) an ERROR span.")
MODEL = typer.Option(None, "--model", help="gen_ai.request.model (or response model).")
SERVICE = typer.Option(None, "--service", help="resource service.name.")
AGENT = typer.Option(None, "--agent", help="gen_ai.agent.name.")


@app.callback()
def main() -> None:
    """Index, query, view, search and export OpenTelemetry trace files."""


def _store(path: Path) -> Any:
    from rlm_env_traces.store import TraceStore

    return TraceStore.load(path)


def _emit(payload: Any) -> None:
    typer.echo(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold" if column.endswith("id") else "ellipsis")  # ids are evidence: whole
    for row in rows:
        table.add_row(*(", ".join(map(str, v)) if isinstance(v, list) else str(v) for v in row))
    Console().print(table)


@app.command()
def index(path: Path = PATH, as_json: bool = AS_JSON) -> None:
    """Build (or reuse) the sidecar index of a trace file."""
    store = _store(path)
    payload = {"trace_path": str(store.path), "index_path": str(store.index_path), "traces": len(store.index.traces),
               "spans": store.index.spans, "malformed_lines": store.index.malformed}  # fmt: skip
    _emit(payload) if as_json else typer.echo(" ".join(f"{k}={v}" for k, v in payload.items()))


@app.command()
def overview(path: Path = PATH, as_json: bool = AS_JSON) -> None:
    """Traces, spans, errors, malformed lines, services, models, agents, tokens, sample ids."""
    data = _store(path).get_overview()
    if as_json:
        return _emit(data)
    _table(f"overview of {path.name}", ["field", "value"], [[k, json.dumps(v) if isinstance(v, dict) else v]
                                                            for k, v in data.items()])  # fmt: skip


@app.command()
def query(path: Path = PATH, errors: Optional[bool] = ERRORS, model: Optional[str] = MODEL,
          service: Optional[str] = SERVICE, agent: Optional[str] = AGENT,
          limit: int = typer.Option(20, "--limit"), offset: int = typer.Option(0, "--offset"),
          as_json: bool = AS_JSON) -> None:  # fmt: skip
    """List the traces matching the filters."""
    data = _store(path).query_traces(has_errors=errors, model=model, service=service, agent=agent, limit=limit,
                                     offset=offset)  # fmt: skip
    if as_json:
        return _emit(data)
    columns = ["trace_id", "spans", "error_spans", "services", "models", "agents", "input_tokens", "output_tokens"]
    _table(f"{data['total']} traces (showing {len(data['traces'])} from {offset})", columns,
           [[t[c] for c in columns] for t in data["traces"]])  # fmt: skip


@app.command()
def view(path: Path = PATH, trace_id: str = typer.Argument(...)) -> None:
    """All spans of one trace, as JSON."""
    _emit(_store(path).view_trace(trace_id))


@app.command()
def search(path: Path = PATH, trace_id: str = typer.Argument(...), pattern: str = typer.Argument(...),
           regex: bool = typer.Option(False, "--regex", help="PATTERN is a regular expression."),
           as_json: bool = AS_JSON) -> None:  # fmt: skip
    """The spans of a trace containing PATTERN."""
    data = _store(path).search_trace(trace_id, pattern, regex=regex)
    if as_json:
        return _emit(data)
    _table(f"{data['match_count']} spans match {pattern!r}", ["span_id", "name", "snippet"],
           [[m["span_id"], m["name"], m["snippet"]] for m in data["matches"]])  # fmt: skip


@app.command()
def export(path: Path = PATH,
           directory: Path = typer.Argument(..., help="A new (or empty) folder for summary.md and traces.jsonl."),
           errors: Optional[bool] = ERRORS, model: Optional[str] = MODEL, service: Optional[str] = SERVICE,
           agent: Optional[str] = AGENT, limit: int = typer.Option(200, "--limit"), as_json: bool = AS_JSON) -> None:  # fmt: skip
    """Write an evidence corpus (Markdown summary + JSONL spans) of the matching traces."""
    data = _store(path).export_evidence_corpus(directory, has_errors=errors, model=model, service=service,
                                               agent=agent, limit=limit)  # fmt: skip
    _emit(data) if as_json else typer.echo(f"{data['traces']} traces → {data['directory']}/summary.md, traces.jsonl")
