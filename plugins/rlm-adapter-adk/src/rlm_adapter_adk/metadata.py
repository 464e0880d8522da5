"""The ``adk-rlm-agent`` framework's metadata schemas (seed 003's ``metadata.py``), as pydantic models: what the
trajectory records about a context loaded into the REPL, about each sub-LM call, about each tool call, and the
session's totals.

They are written by the ``metadata`` callback bundle (``rlm_adapter_adk.bundles``): a tool result's ``metadata``
(a :class:`ToolMetadata`, in the step's observation), the session state (``rlm_context_metadata``,
``rlm_sub_lm_calls``, ``rlm_agent_metrics``) and the run's ``framework_metadata`` (``contexts``, ``sub_lm_calls``,
``session_metrics``). ``to_dict()`` is the JSON form (the seed's schemas' method); ``format_for_prompt()`` of a
context is what the model is told about it.

This module imports pydantic only (no ADK): a program may read the schemas back from a trajectory with it.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

#: Chunk sizes listed in a context's metadata (the count is always whole).
MAX_LISTED_CHUNKS = 50
#: Keys described in a context's schema hint.
MAX_HINT_KEYS = 30


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (what the trajectory, the session state and ``framework_metadata`` hold)."""
        return self.model_dump(mode="json")


class ContextMetadata(_Schema):
    """A context loaded into the REPL (seed 003's ``RLMContextMetadata``): never the content, at most its shape.

    ``chunk_count`` / ``chunk_sizes``: the pieces a model would read one ``llm_query`` at a time — the documents of
    a list, the values of a dict, or ``chunk_chars``-character slices of a text."""

    variable: str = Field(description="the REPL variable holding it")
    context_type: str = Field(description="str, list, dict… (the Python type in the REPL)")
    total_size_chars: int = Field(description="characters: the text's, or the JSON text's of data")
    chunk_count: int = 0
    chunk_sizes: list[int] = Field(default_factory=list, description=f"the first {MAX_LISTED_CHUNKS} chunks' sizes")
    data_sources: list[str] = Field(default_factory=list, description="where it came from (paths relative to the "
                                                                      "folder it was loaded from)")
    schema_hint: Optional[dict[str, Any]] = Field(None, description="for data: its keys and their value types")

    @classmethod
    def of(cls, value: Any, *, variable: str, sources: list[str], chunk_chars: int) -> "ContextMetadata":
        if isinstance(value, str):
            size = len(value)
            count = math.ceil(size / chunk_chars) if size else 0
            sizes = [min(chunk_chars, size - i * chunk_chars) for i in range(min(count, MAX_LISTED_CHUNKS))]
            return cls(variable=variable, context_type="str", total_size_chars=size, chunk_count=count,
                       chunk_sizes=sizes, data_sources=sources)
        if isinstance(value, list):
            sizes = [len(item) if isinstance(item, str) else len(_json(item)) for item in value]
            hint = _hint(value[0]) if value and isinstance(value[0], dict) else None
            return cls(variable=variable, context_type="list", total_size_chars=sum(sizes), chunk_count=len(value),
                       chunk_sizes=sizes[:MAX_LISTED_CHUNKS], data_sources=sources, schema_hint=hint)
        if isinstance(value, dict):
            sizes = [len(_json(item)) for item in value.values()]
            return cls(variable=variable, context_type="dict", total_size_chars=len(_json(value)),
                       chunk_count=len(value), chunk_sizes=sizes[:MAX_LISTED_CHUNKS], data_sources=sources,
                       schema_hint=_hint(value))
        return cls(variable=variable, context_type=type(value).__name__, total_size_chars=len(_json(value)),
                   data_sources=sources)

    def format_for_prompt(self) -> str:
        """One line for the model: the variable, its type and size, its chunks, where it came from, its keys."""
        kind = {"str": "a string", "list": "a list", "dict": "a dict"}.get(self.context_type, f"a {self.context_type}")
        text = f"`{self.variable}` is {kind} of {self.total_size_chars:,} characters"
        if self.context_type == "list":
            text = f"`{self.variable}` is a list of {self.chunk_count:,} items, {self.total_size_chars:,} characters"
        elif self.chunk_count > 1:
            text += f" ({self.chunk_count:,} chunks)"
        if self.data_sources:
            text += f", from {', '.join(self.data_sources)}"
        if self.schema_hint:
            text += "; keys: " + ", ".join(f"{k} ({v})" for k, v in self.schema_hint.items())
        return text


class SubLMCallMetadata(_Schema):
    """One sub-LM call (seed 003's ``RLMSubLMCallMetadata``): an ``llm_query`` / ``llm_query_batched`` prompt of
    code run by ``rlm_execute_code``, or an ``rlm_query_context`` (an RLM sub-query: a child run)."""

    call_index: int = Field(description="1, 2… in the run")
    kind: str = Field(description="llm_query, llm_query_batched, rlm_query, or rlm_query at max_depth (a plain "
                                  "llm_query)")
    model: Optional[str] = None
    prompt_length: int = Field(description="characters of the prompt (rlm_query: of the query)")
    response_length: int = 0
    latency_ms: float = 0.0
    is_batched: bool = False
    batch_size: int = 1
    input_tokens: Optional[int] = None
    output_tokens: Optional[int] = None
    error: Optional[str] = None


class ToolMetadata(_Schema):
    """One tool call, as the ``metadata`` bundle's after-tool callback attaches it to the tool's result (the step's
    ``observation.metadata``; the model is not shown it)."""

    tool: str
    agent: str = Field(description="the agent that called it: rlm_agent or context_loader")
    status: Literal["success", "error", "refused"] = "success"
    latency_ms: float = 0.0
    error_type: Optional[str] = None
    variables_created: list[str] = Field(default_factory=list, description="rlm_execute_code: REPL variables the "
                                                                           "code created")
    sub_lm_calls: list[SubLMCallMetadata] = Field(default_factory=list)
    context: Optional[ContextMetadata] = Field(None, description="rlm_load_context: what was loaded")


class SessionMetrics(_Schema):
    """The session's totals (seed 003's ``RLMSessionMetrics``), kept by the ``metadata`` bundle's callbacks."""

    model_calls: int = 0
    model_latency_ms: float = 0.0
    model_errors: int = 0
    tool_calls: int = 0
    tool_errors: int = 0
    tools_refused: int = 0
    code_executions: int = 0
    contexts_loaded: int = 0
    context_queries: int = 0
    sub_lm_calls: int = 0
    final_answer_found: bool = False


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _hint(value: dict[str, Any]) -> dict[str, str]:
    return {str(key): type(item).__name__ for key, item in list(value.items())[:MAX_HINT_KEYS]}
