"""adk-rlm's ADK callbacks and ``custom_metadata`` (seed 003's design), kept apart from the loop that uses them.

- the loop agent's ``before_agent_callback`` opens the session metrics (``STATE_METRICS``) and its
  ``after_agent_callback`` closes them (total time, termination);
- the code generator's ``before_model_callback`` stamps the call's start, its ``after_model_callback`` measures
  the latency and attaches :class:`IterationMetadata` (code blocks, ``llm_query`` / ``llm_query_batched`` /
  ``rlm_query`` in the code, a FINAL and its kind) to the reply's ``custom_metadata`` and to the state, and its
  ``on_model_error_callback`` counts the error (then lets it propagate: the run records it);
- the REPL executor (an agent, not an ADK tool: the code runs in rlm's sandbox) does what the seeds' before_tool /
  after_tool callbacks did: it skips a reply without code blocks and attaches :class:`ExecutionMetadata` (blocks
  run, sub-model calls, time, status, the error's type) to its event's ``custom_metadata``.

The metrics end in the run's ``framework_metadata`` (``session_metrics``), so ``rlm runs show --json`` has them.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Any, Optional

STATE_METRICS = "rlm_metrics"
STATE_ITERATION_META = "rlm_iteration_metadata"
_STARTED = "_rlm_model_started"
_LOOP_STARTED = "_rlm_loop_started"

_BLOCK = re.compile(r"```repl[ \t]*\n(.*?)```", re.DOTALL)
_FINAL_KIND = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\(", re.MULTILINE)


@dataclass
class IterationMetadata:
    """What one code generator reply holds (``LlmResponse.custom_metadata["rlm_iteration"]``)."""

    iteration_number: int
    code_block_count: int = 0
    has_llm_query: bool = False
    has_llm_query_batched: bool = False
    has_rlm_query: bool = False
    has_final_answer: bool = False
    final_answer_type: Optional[str] = None  # "FINAL", "FINAL_VAR" or None

    @classmethod
    def of(cls, reply: str, number: int) -> "IterationMetadata":
        code = "\n".join(_BLOCK.findall(reply or ""))
        final = _FINAL_KIND.search(reply or "")
        return cls(number, len(_BLOCK.findall(reply or "")), "llm_query(" in code, "llm_query_batched(" in code,
                   "rlm_query(" in code, final is not None, final.group(1) if final else None)


@dataclass
class ExecutionMetadata:
    """What one REPL execution did (the executor event's ``custom_metadata["rlm_execution"]``)."""

    iteration_number: int
    blocks_executed: int = 0
    llm_calls_made: int = 0
    execution_time_ms: float = 0.0
    status: str = "success"  # "success", "error", "no_code"
    error_type: Optional[str] = None


def new_metrics() -> dict[str, Any]:
    """The session metrics, as JSON values in the session state."""
    return {"total_iterations": 0, "total_code_blocks": 0, "total_llm_query_calls": 0,
            "total_llm_query_batched_calls": 0, "total_rlm_query_calls": 0, "total_sub_lm_calls": 0,
            "total_execution_time_seconds": 0.0, "total_model_latency_ms": 0.0, "errors_encountered": 0,
            "errors_recovered": 0, "final_answer_found": False, "termination_reason": ""}


# ---------------------------------------------------------------------------------------------- the loop agent


def before_loop(callback_context: Any) -> None:
    callback_context.state[STATE_METRICS] = new_metrics()
    callback_context.state[_LOOP_STARTED] = time.monotonic()
    return None


def after_loop(callback_context: Any) -> None:
    metrics = dict(callback_context.state.get(STATE_METRICS) or new_metrics())
    started = callback_context.state.get(_LOOP_STARTED)
    if started is not None:
        metrics["total_execution_time_seconds"] = round(time.monotonic() - started, 3)
    metrics["final_answer_found"] = callback_context.state.get("rlm_final_answer") is not None
    metrics["termination_reason"] = "FINAL" if metrics["final_answer_found"] else "max_iterations"
    callback_context.state[STATE_METRICS] = metrics
    return None


# ---------------------------------------------------------------------------------------------- the code generator


def before_model(callback_context: Any, llm_request: Any = None) -> None:
    callback_context.state[_STARTED] = time.monotonic()
    return None  # go on to the model


def after_model(callback_context: Any, llm_response: Any) -> Any:
    """Latency into the metrics; the reply's :class:`IterationMetadata` onto it and into the state."""
    metrics = dict(callback_context.state.get(STATE_METRICS) or new_metrics())
    started = callback_context.state.get(_STARTED)
    if started is not None:
        metrics["total_model_latency_ms"] = round(metrics["total_model_latency_ms"]
                                                  + (time.monotonic() - started) * 1000, 1)
    text = "".join(part.text or "" for part in (llm_response.content.parts if llm_response.content else []) or [])
    number = len(callback_context.state.get("rlm_iterations") or []) + 1
    meta = IterationMetadata.of(text, number)
    metrics["total_code_blocks"] += meta.code_block_count
    metrics["total_llm_query_calls"] += int(meta.has_llm_query)
    metrics["total_llm_query_batched_calls"] += int(meta.has_llm_query_batched)
    metrics["total_rlm_query_calls"] += int(meta.has_rlm_query)
    callback_context.state[STATE_METRICS] = metrics
    callback_context.state[STATE_ITERATION_META] = asdict(meta)
    llm_response.custom_metadata = {**(llm_response.custom_metadata or {}), "rlm_iteration": asdict(meta)}
    return llm_response


def on_model_error(callback_context: Any, llm_request: Any, error: Exception) -> None:
    """Count the error; None lets it propagate (the run records it as its own error or a budget stop)."""
    metrics = dict(callback_context.state.get(STATE_METRICS) or new_metrics())
    metrics["errors_encountered"] += 1
    callback_context.state[STATE_METRICS] = metrics
    return None


# ---------------------------------------------------------------------------------------------- the executor


def record_execution(state: dict[str, Any], record: dict[str, Any], seconds: float, llm_calls: int) -> dict:
    """The executor's :class:`ExecutionMetadata` for an iteration's ``record``, and the metrics updated with it
    (returned as the state delta's value)."""
    blocks = record.get("blocks") or []
    failed = [b for b in blocks if not b.get("ok")]
    status = "no_code" if not blocks else "error" if failed else "success"
    error_type = None
    if failed:
        found = re.search(r"\b([A-Z][A-Za-z]+(?:Error|Exception))\b", str(failed[-1].get("output", "")))
        error_type = found.group(1) if found else "error"
    meta = ExecutionMetadata(int(record.get("iteration", 0)), len(blocks), llm_calls, round(seconds * 1000, 1),
                             status, error_type)
    metrics = dict(state.get(STATE_METRICS) or new_metrics())
    metrics["total_iterations"] += 1
    metrics["total_sub_lm_calls"] += llm_calls
    previous = (state.get("rlm_iterations") or [])[-1:] or [None]
    if failed:
        metrics["errors_encountered"] += 1
    elif previous[0] is not None and not all(b.get("ok") for b in previous[0].get("blocks") or [{"ok": True}]):
        metrics["errors_recovered"] += 1  # the iteration after a failed one ran clean
    return {"metadata": asdict(meta), "metrics": metrics}
