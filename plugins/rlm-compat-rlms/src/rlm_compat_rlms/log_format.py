"""A saved run tree as the log of the authors' ``rlms`` package, which their web visualiser opens.

The format is what ``rlm.logger.RLMLogger`` writes (rlms 0.1.3, github.com/alexzhang13/rlm at 72d6940:
``rlm/logger/rlm_logger.py``, ``rlm/core/types.py``) and ``visualizer/src/lib/parse-logs.ts`` reads. It is JSON
lines: first ``{"type": "metadata", "timestamp", root_model, max_depth, max_iterations, backend, backend_kwargs,
environment_type, environment_kwargs, other_backends}``, then per root model turn ``{"type": "iteration",
"iteration", "timestamp", "prompt", "response", "code_blocks": [{"code", "result": {"stdout", "stderr", "locals",
"execution_time", "rlm_calls", "final_answer"}}], "final_answer", "iteration_time"}``. ``rlm_calls`` are the
sub-calls a block made (``RLMChatCompletion``: root_model, prompt, response, usage_summary, execution_time, and
for a child run ``metadata`` = its whole trajectory ``{"run_metadata", "iterations"}``; ``error`` if it failed).

Mapping: root steps → iterations; step blocks → code_blocks (a block's ``error`` is appended to its stderr, as
rlms appends the exception); the step's ``sub_call`` events → ``rlm_calls`` of the first block, from the one
where the previous call was, whose code names the call's function (else the last block); a child run → its
rlm_query call, nested in ``metadata``; ``max_steps`` → max_iterations; ``max_depth + 1`` → max_depth (rlms
counts the root as a level); the model's provider → backend; the sandbox → environment_type. A run that ended
without a final step but with an answer (steps used up) gets rlms' closing iteration: no code, the answer.

Not recorded by us, so filled in: ``prompt`` (we do not keep the messages a model saw) is rebuilt as the task,
then each earlier reply and its REPL output; ``locals`` is ``{}``; a sub-call's prompt and response are the
first 500 characters we keep (the whole response when we kept it). Not exported: compaction, model_retry, error
and sink_error events, and sub-calls after an interrupted run's last step. Each ``rlm_calls`` entry also has
``prompt_tokens`` and ``completion_tokens``, which the visualiser shows (``visualizer/src/lib/types.ts``).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Iterable, Optional

from rlm_host import RunEvent, Usage
from rlm_host.sdk.embedding import Replay

if TYPE_CHECKING:
    from rlm_host.trajectory.tree import ReplayStep, RunTrace, SubCall

#: The functions whose calls a ``sub_call`` kind names (``rlm_query(max_depth: plain llm_query)`` → rlm_query).
_CALL_NAMES = ("llm_query_batched", "rlm_query_batched", "llm_query", "rlm_query", "delegate")


def to_rlms_log(events: Iterable[RunEvent]) -> list[dict[str, Any]]:
    """The lines of an rlms log for the run tree of ``events``: the metadata line, then one per iteration."""
    events = list(events)
    replay = Replay(events)
    finished = {e.run_id: e.ts for e in events if e.type == "final"}
    started = {e.run_id: e.ts for e in events if e.type == "run_start"}
    root = replay.root
    head = {"type": "metadata", "timestamp": _time(started.get(root.run_id, events[0].ts)), **_metadata(root)}
    return [head, *_iterations(root, finished)]


def write_rlms_log(events: Iterable[RunEvent], out: IO[str]) -> None:
    """Write the rlms log of ``events`` to ``out``, one JSON object a line, as ``RLMLogger`` does."""
    for line in to_rlms_log(events):
        out.write(json.dumps(line, default=repr) + "\n")


def create(settings: Any, services: Any) -> Any:
    """The ``rlms`` exporter's factory (``rlm runs export RUN --format rlms``): its writer."""
    return write_rlms_log


def _time(ts: float) -> str:
    """rlms' timestamps: local time, ISO 8601 without a zone (``datetime.now().isoformat()``)."""
    return datetime.fromtimestamp(ts).isoformat()


def _metadata(run: RunTrace) -> dict[str, Any]:
    """``RLMMetadata.to_dict()`` of a run, from its run_start event."""
    start = run.start
    settings = start.get("settings") or {}
    model = str(start.get("model") or (run.result.model if run.result else "") or "unknown")
    backend_kwargs: dict[str, Any] = {"model_name": model}
    if settings.get("base_url"):
        backend_kwargs["base_url"] = settings["base_url"]
    sub_model = start.get("sub_model")
    sub = _provider(start.get("sub_provider"), str(sub_model or ""))
    max_depth = settings.get("max_depth")
    return {
        "root_model": model,
        "max_depth": max_depth + 1 if isinstance(max_depth, int) else None,
        "max_iterations": settings.get("max_steps"),
        "backend": _provider(start.get("provider"), model),
        "backend_kwargs": backend_kwargs,
        "environment_type": start.get("sandbox") or settings.get("sandbox"),
        "environment_kwargs": {"environment": start.get("environment"), "framework": start.get("framework")},
        "other_backends": [sub] if sub_model and sub_model != model and sub else None,
    }


def _provider(provider: Optional[str], model: str) -> Optional[str]:
    """A model's provider; files of schema 1 did not record it, but their model strings start with it."""
    return provider or (model.split(":", 1)[0] if ":" in model else None)


def _iterations(run: RunTrace, finished: dict[str, float]) -> list[dict[str, Any]]:
    """The logger's iteration entries of a run (``{"type": "iteration", "iteration": n, "timestamp", ...}``)."""
    answer = run.result.final_response if run.result else None
    finals = [answer if s.record.action == "final" and s is run.steps[-1] else None for s in run.steps]
    turns = [(step, _blocks(step, finished, final)) for step, final in zip(run.steps, finals)]
    entries = []
    for n, ((step, blocks), final) in enumerate(zip(turns, finals), 1):
        entries.append({"type": "iteration", "iteration": n, "timestamp": _time(step.event.ts),
                        "prompt": _prompt(run, turns[: n - 1]), "response": step.record.reply or "",
                        "code_blocks": blocks, "final_answer": final,
                        "iteration_time": step.record.duration_s})
    if answer is not None and (not run.steps or run.steps[-1].record.action != "final"):
        # rlms' _default_answer: out of iterations, one more model call gives the answer (no iteration_time)
        entries.append({"type": "iteration", "iteration": len(entries) + 1,
                        "timestamp": _time(finished.get(run.run_id, run.steps[-1].event.ts if run.steps else 0)),
                        "prompt": _prompt(run, turns), "response": answer, "code_blocks": [],
                        "final_answer": answer, "iteration_time": None})
    return entries


def _prompt(run: RunTrace, earlier: list[tuple[ReplayStep, list[dict]]]) -> list[dict[str, str]]:
    """The messages of a turn, rebuilt: the task, then each earlier reply and its output (rlms' format_iteration)."""
    messages = [{"role": "user", "content": str(run.start.get("task") or (run.result.task if run.result else ""))}]
    for step, blocks in earlier:
        messages.append({"role": "assistant", "content": step.record.reply or ""})
        parts = [f"REPL output{f' (block {i})' if len(blocks) > 1 else ''}:\n"
                 f"{b['result']['stdout']}{b['result']['stderr']}" for i, b in enumerate(blocks, 1)]
        if parts:
            messages.append({"role": "user", "content": "\n\n".join(parts)})
    return messages


def _blocks(step: ReplayStep, finished: dict[str, float], final: Optional[str]) -> list[dict[str, Any]]:
    """A step's code blocks as ``CodeBlock.to_dict()``, its sub-calls in the ``rlm_calls`` of the block making them;
    the block that gave the run's answer (``final``) holds it as its ``final_answer``."""
    record = step.record
    observation = record.observation
    raw = [b for b in observation.get("blocks") or [] if isinstance(b, dict)]
    if not raw and record.code:  # an environment that runs one program a step (observation: stdout, stderr…)
        seconds = max(0.0, record.duration_s - record.model_seconds)
        raw = [{"code": record.code, "duration_s": seconds,
                **{k: observation.get(k) for k in ("stdout", "stderr", "error", "timed_out")}}]
    if not raw and step.sub_calls:  # sub-calls without code (a delegate action): a block holds them
        raw = [{"code": ""}]
    blocks: list[dict[str, Any]] = [{"code": str(b.get("code") or ""), "result": _result(b, final)} for b in raw]
    at = 0
    for call in step.sub_calls:
        name = next((n for n in _CALL_NAMES if call.kind.startswith(n)), call.kind)
        at = next((i for i in range(at, len(blocks)) if name in blocks[i]["code"]), len(blocks) - 1)
        blocks[at]["result"]["rlm_calls"].append(_call(call, finished))
    return blocks


def _result(block: dict[str, Any], final: Optional[str]) -> dict[str, Any]:
    """``REPLResult.to_dict()`` of one block record."""
    stderr = str(block.get("stderr") or "")
    if block.get("error"):
        stderr += f"\n{block['error']}"
    elif block.get("timed_out"):
        stderr += "\nTimeoutError: the code block timed out"
    return {"stdout": str(block.get("stdout") or ""), "stderr": stderr, "locals": {},
            "execution_time": float(block.get("duration_s") or 0.0), "rlm_calls": [],
            "final_answer": final if block.get("final") is not None else None}


def _call(call: SubCall, finished: dict[str, float]) -> dict[str, Any]:
    """``RLMChatCompletion.to_dict()`` of a sub-call; a child run's trajectory goes in its ``metadata``."""
    data = call.event.data
    child = call.child
    if child is not None:
        result = child.result
        model = str(child.start.get("model") or data.get("model") or "unknown")
        usage = _summary({model: result.usage.root, str(child.start.get("sub_model") or model): result.usage.sub}
                         if result else {})
        response = (result.final_response if result else None) or data.get("response") or data.get("error") or ""
        out: dict[str, Any] = {"root_model": model, "prompt": str(child.start.get("task") or data.get("prompt") or ""),
               "response": str(response), "usage_summary": usage,
               "execution_time": float(data.get("seconds") or (result.duration_s if result else 0.0)),
               "metadata": {"run_metadata": _metadata(child), "iterations": _iterations(child, finished)}}
    else:
        model = str(data.get("model") or "unknown")
        tokens = data.get("usage") or {}
        used = Usage(calls=1, input_tokens=int(tokens.get("input_tokens") or 0),
                     output_tokens=int(tokens.get("output_tokens") or 0))
        out = {"root_model": model, "prompt": str(data.get("prompt") or ""),
               "response": str(data.get("response_full") or data.get("response") or ""),
               "usage_summary": _summary({} if data.get("error") else {model: used}),
               "execution_time": float(data.get("seconds") or 0.0)}
    if data.get("error"):
        out["error"] = str(data["error"])
    summaries = out["usage_summary"]["model_usage_summaries"].values()
    out["prompt_tokens"] = sum(s["total_input_tokens"] for s in summaries)
    out["completion_tokens"] = sum(s["total_output_tokens"] for s in summaries)
    return out


def _summary(by_model: dict[str, Usage]) -> dict[str, Any]:
    """``UsageSummary.to_dict()``: per model calls and tokens, ``total_cost`` only where a cost is known."""
    merged: dict[str, dict[str, Any]] = {}
    for model, usage in by_model.items():
        if not usage.calls:
            continue
        entry = merged.setdefault(model, {"total_calls": 0, "total_input_tokens": 0, "total_output_tokens": 0})
        entry["total_calls"] += usage.calls
        entry["total_input_tokens"] += usage.input_tokens
        entry["total_output_tokens"] += usage.output_tokens
        if usage.cost is not None:
            entry["total_cost"] = entry.get("total_cost", 0.0) + usage.cost
    out: dict[str, Any] = {"model_usage_summaries": merged}
    costs = [e["total_cost"] for e in merged.values() if "total_cost" in e]
    if costs:
        out["total_cost"] = sum(costs)
    return out


__all__ = ["create", "to_rlms_log", "write_rlms_log"]
