"""``rlm traces …``: the TraceStore's operations on the command line; rich tables, or ``--json`` for scripts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

app = typer.Typer(help="Index, query, view, search and export OpenTelemetry trace files.", rich_markup_mode=None,
                  no_args_is_help=True, add_completion=False)

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
    cells = [[", ".join(map(str, v)) if isinstance(v, list) else str(v) for v in row] for row in rows]
    wide = sum(max([len(column), *(len(row[i]) for row in cells)]) + 3 for i, column in enumerate(columns)) + 1
    for column in columns:
        if column.endswith("id"):  # ids are evidence: whole, on one line (other columns give way)
            table.add_column(column, no_wrap=True, min_width=32)
        else:
            table.add_column(column, overflow="ellipsis")
    for row in cells:
        table.add_row(*row)
    console = Console()
    # piped: as wide as the content (nothing cut); on a terminal: its width, ids kept whole and other columns cut
    Console(width=wide).print(table) if not console.is_terminal else console.print(table)


@app.command()
def index(path: Path = PATH, as_json: bool = AS_JSON) -> None:
    """Build (or reuse) the sidecar index of a trace file."""
    store = _store(path)
    payload = {"trace_path": str(store.path), "index_path": str(store.index_path), "traces": len(store.index.traces),
               "spans": store.index.spans, "malformed_lines": store.index.malformed}
    _emit(payload) if as_json else typer.echo(" ".join(f"{k}={v}" for k, v in payload.items()))


@app.command()
def overview(path: Path = PATH, as_json: bool = AS_JSON) -> None:
    """Traces, spans, errors, malformed lines, services, models, agents, tokens, sample ids."""
    data = _store(path).get_overview()
    if as_json:
        return _emit(data)
    _table(f"overview of {path.name}", ["field", "value"], [[k, json.dumps(v) if isinstance(v, dict) else v]
                                                            for k, v in data.items()])


@app.command()
def query(path: Path = PATH, errors: Optional[bool] = ERRORS, model: Optional[str] = MODEL,
          service: Optional[str] = SERVICE, agent: Optional[str] = AGENT,
          limit: int = typer.Option(20, "--limit"), offset: int = typer.Option(0, "--offset"),
          as_json: bool = AS_JSON) -> None:
    """List the traces matching the filters."""
    data = _store(path).query_traces(has_errors=errors, model=model, service=service, agent=agent, limit=limit,
                                     offset=offset)
    if as_json:
        return _emit(data)
    columns = ["trace_id", "spans", "error_spans", "services", "models", "agents", "input_tokens", "output_tokens"]
    _table(f"{data['total']} traces (showing {len(data['traces'])} from {offset})", columns,
           [[t[c] for c in columns] for t in data["traces"]])


TRACE_ID = typer.Argument(..., help="A trace id, or a unique prefix of one (6 characters at least).")


@app.command()
def view(path: Path = PATH, trace_id: str = TRACE_ID) -> None:
    """All spans of one trace, as JSON."""
    _emit(_store(path).view_trace(trace_id))


@app.command()
def search(path: Path = PATH, trace_id: str = TRACE_ID, pattern: str = typer.Argument(...),
           regex: bool = typer.Option(False, "--regex", help="PATTERN is a regular expression."),
           as_json: bool = AS_JSON) -> None:
    """The spans of a trace containing PATTERN."""
    data = _store(path).search_trace(trace_id, pattern, regex=regex)
    if as_json:
        return _emit(data)
    _table(f"{data['match_count']} spans match {pattern!r}", ["span_id", "name", "snippet"],
           [[m["span_id"], m["name"], m["snippet"]] for m in data["matches"]])


@app.command()
def export(path: Path = PATH,
           directory: Path = typer.Argument(..., help="A new (or empty) folder for summary.md and traces.jsonl."),
           errors: Optional[bool] = ERRORS, model: Optional[str] = MODEL, service: Optional[str] = SERVICE,
           agent: Optional[str] = AGENT, limit: int = typer.Option(200, "--limit"),
           as_json: bool = AS_JSON) -> None:
    """Write an evidence corpus (Markdown summary + JSONL spans) of the matching traces."""
    data = _store(path).export_evidence_corpus(directory, has_errors=errors, model=model, service=service,
                                               agent=agent, limit=limit)
    _emit(data) if as_json else typer.echo(f"{data['traces']} traces → {data['directory']}/summary.md, traces.jsonl")


@app.command()
def generate(path: Path = typer.Argument(..., metavar="PATH", help="The file to write (.gz: gzip)."),
             traces: int = typer.Option(60, "--traces", min=1, help="How many agent runs (traces)."),
             fmt: str = typer.Option("mixed", "--format", help="flat (one span a line), otlp (OTLP-JSON batches) or "
                                     "mixed."),
             malformed: int = typer.Option(2, "--malformed", min=0, help="Bad lines spread through the file."),
             seed: int = typer.Option(7, "--seed", help="Same seed, same file."),
             as_json: bool = AS_JSON) -> None:
    """Write a generated agent-harness trace file (a systemic tool timeout and a one-off rate limit to find)."""
    from rlm_env_traces.generate import generate as write

    if fmt not in ("flat", "otlp", "mixed"):
        raise typer.BadParameter(f"{fmt!r}: choose flat, otlp or mixed", param_hint="--format")
    if os.path.lexists(path):  # a link too, even a dangling one: it would write where it points
        raise typer.BadParameter(f"{path} exists: name a new file", param_hint="PATH")
    data = write(path, traces=traces, fmt=fmt, malformed=malformed, seed=seed)
    _emit(data) if as_json else typer.echo(f"wrote {path}: " + " ".join(f"{k}={v}" for k, v in data.items()
                                                                         if not isinstance(v, (list, dict))))
