"""The ``trace_rlm`` environment: the built-in pure_rlm REPL loop over a trace file, the store's operations as
functions the model's code calls (``count_traces(has_errors=True)``, ``view_trace(id)``…).

It is pure_rlm itself, built through the host's registry, with three things changed in the context it gets: the
sandbox session gains the trace functions when it starts (``SandboxSession.register_functions``, the protocol's
own way), ``context`` is the file's overview (the file stays on the host, indexed, so an RLM can work over a file
far larger than any prompt), and the task names the functions. A run without a trace file (a child run of
``rlm_query`` over its own context) is plain pure_rlm.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host.sdk.context import describe_context
from rlm_host.sdk.environments import EnvironmentContext

from rlm_env_traces.paths import confined, trace_path_of
from rlm_env_traces.store import TraceStore

FUNCTIONS_NOTE = """

The REPL can query the trace file {path} (the variable `context` holds its overview; the file itself is not \
loaded): trace_overview(), query_traces(has_errors=None, model=None, service=None, agent=None, limit=20, \
offset=0), count_traces(has_errors=None, model=None, service=None, agent=None), view_trace(trace_id), \
view_spans(trace_id, span_ids), search_trace(trace_id, pattern, regex=False), export_evidence_corpus(directory, \
has_errors=None, model=None, service=None, agent=None). Each span shows its `kind` (CLIENT, INTERNAL…) and \
its `events` (name, time, attributes: code run, its output, replies, exceptions). Look for failures that recur \
across traces and cite trace and span ids."""


class TraceRLMSettings(BaseModel):
    """``[environment.trace_rlm]`` (the REPL loop itself keeps pure_rlm's defaults)."""

    model_config = ConfigDict(extra="forbid")

    output_dir: str = Field("trace-evidence", description="where export_evidence_corpus writes")


def create(settings: Optional[TraceRLMSettings], ctx: EnvironmentContext) -> Any:
    """The pure_rlm environment, given the trace functions when the run has a trace file."""
    settings = settings or TraceRLMSettings()
    path = trace_path_of(ctx.context, ctx.task)
    inner = ctx
    if path is not None:
        store = TraceStore.load(path, time_left=ctx.budget.remaining)  # every read bounded by the run's time left
        functions = trace_functions(store, Path(settings.output_dir).expanduser().resolve())
        overview = store.get_overview()
        inner = replace(ctx, context=overview, context_meta=describe_context(overview),
                        task=ctx.task + FUNCTIONS_NOTE.format(path=store.path),
                        open_sandbox=lambda: _WithFunctions(ctx.open_sandbox(), functions))
    environment = ctx.build_environment("pure_rlm", inner)  # with its [environment.pure_rlm] settings
    environment.name = "trace_rlm"
    return environment


def trace_functions(store: TraceStore, output_dir: Path) -> dict[str, Callable[..., Any]]:
    """The store's operations under the names the model calls; exports confined to ``output_dir``."""

    def export_evidence_corpus(directory: str, **filters: Any) -> dict[str, Any]:
        return store.export_evidence_corpus(confined(directory, output_dir, [output_dir]), **filters)

    return {"trace_overview": store.get_overview, "query_traces": store.query_traces,
            "count_traces": store.count_traces, "view_trace": store.view_trace, "view_spans": store.view_spans,
            "search_trace": store.search_trace, "export_evidence_corpus": export_evidence_corpus}


class _WithFunctions:
    """A sandbox session that gains the trace functions as it starts; everything else is the session's own."""

    def __init__(self, session: Any, functions: dict[str, Callable[..., Any]]) -> None:
        self._session = session
        self._functions = functions

    def start(self) -> None:
        self._session.start()
        self._session.register_functions(self._functions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)
