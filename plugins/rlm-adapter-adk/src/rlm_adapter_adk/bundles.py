"""Callback bundles of the ``adk-rlm-agent`` framework (seed 003's ``get_*_callbacks()``): a named set of ADK
agent callbacks — before/after agent, before/after model, on model error, before/after tool — attached to the
framework's ``LlmAgent`` s (the root agent and the ``context_loader``), in the order ``[framework.adk-rlm-agent]
callbacks`` names them. ADK runs each kind as a chain: the first callback returning something answers (a
``before_tool`` callback's dict is the tool's result, the tool does not run).

Built in:

- ``approvals`` (always on): before each call of one of the framework's tools, the run's approvals
  (``[run] approve``, ``approval_rules``) are asked; a refusal is the tool's result (``{"ok": false, "output":
  "refused: …", "refused": true}``), a ``tool_error`` step the model reads, and the tool never runs. The tools are
  reads (never asked about in ``ask`` mode, as the REPL's code is not in a native run): a rule names one to deny or
  ask. The user's own tools are asked on the host's tool path, as everywhere.
- ``metadata``: times each model and tool call, attaches a :class:`~rlm_adapter_adk.metadata.ToolMetadata` to each
  tool's result (``metadata``: in the step's observation, never shown to the model), keeps the session metrics,
  loaded contexts and sub-LM calls in the session state and the run's ``framework_metadata``.
- ``logging``: each model call and tool call at info level on the ``rlm.adk`` logger.

A program adds its own with :func:`register_callback_bundle` (a factory called once per run with the framework)
and names it in the settings. Each callback receives ADK's keyword arguments (``callback_context``,
``llm_request``, ``llm_response``, ``error``; ``tool``, ``args``, ``tool_context``, ``tool_response``).

This module does not import ADK.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rlm_host import ConfigError
from rlm_host.sdk.environments import ApprovalRequest

from rlm_adapter_adk.metadata import SessionMetrics, SubLMCallMetadata, ToolMetadata

#: The LlmAgent keyword of each kind of callback.
KINDS = {"before_agent": "before_agent_callback", "after_agent": "after_agent_callback",
         "before_model": "before_model_callback", "after_model": "after_model_callback",
         "on_model_error": "on_model_error_callback", "before_tool": "before_tool_callback",
         "after_tool": "after_tool_callback"}
#: Session state keys the ``metadata`` bundle writes.
STATE_METRICS, STATE_CONTEXTS, STATE_SUB_CALLS = "rlm_agent_metrics", "rlm_context_metadata", "rlm_sub_lm_calls"


@dataclass
class CallbackBundle:
    """A named set of ADK agent callbacks (lists: several of one kind run in order)."""

    name: str
    before_agent: list[Callable[..., Any]] = field(default_factory=list)
    after_agent: list[Callable[..., Any]] = field(default_factory=list)
    before_model: list[Callable[..., Any]] = field(default_factory=list)
    after_model: list[Callable[..., Any]] = field(default_factory=list)
    on_model_error: list[Callable[..., Any]] = field(default_factory=list)
    before_tool: list[Callable[..., Any]] = field(default_factory=list)
    after_tool: list[Callable[..., Any]] = field(default_factory=list)


BundleFactory = Callable[[Any], CallbackBundle]
_FACTORIES: dict[str, BundleFactory] = {}


def register_callback_bundle(name: str, factory: BundleFactory) -> None:
    """Make ``name`` usable in ``[framework.adk-rlm-agent] callbacks``: ``factory(framework)`` is called once per
    run and returns the :class:`CallbackBundle` (the framework gives ``run_id``, ``approvals``, ``metrics``…)."""
    if not name or name in ("approvals", "metadata", "logging"):
        raise ValueError(f"{name!r} is a built-in bundle's name (or empty)")
    _FACTORIES[name] = factory


def callback_bundle_names() -> list[str]:
    return ["approvals", "metadata", "logging", *_FACTORIES]


def build_bundles(names: list[str], framework: Any) -> list[CallbackBundle]:
    """The bundles ``names`` for one run, in order (ConfigError for a name nobody registered: exit 2)."""
    built = {"approvals": approvals_bundle, "metadata": metadata_bundle, "logging": logging_bundle, **_FACTORIES}
    unknown = [name for name in names if name not in built]
    if unknown:
        raise ConfigError(f"[framework.adk-rlm-agent] callbacks: no callback bundle named {', '.join(unknown)}",
                          hint=f"the bundles are: {', '.join(callback_bundle_names())}")
    return [built[name](framework) for name in names]


def agent_callbacks(bundles: list[CallbackBundle]) -> dict[str, Any]:
    """The ``LlmAgent`` keyword arguments of ``bundles``: each kind's callbacks in the bundles' order (new lists at
    each call: one agent's never shared with another's). Typed ``Any``: each keyword has its own callback type."""
    merged: dict[str, Any] = {}
    for kind, keyword in KINDS.items():
        callbacks = [callback for bundle in bundles for callback in getattr(bundle, kind)]
        if callbacks:
            merged[keyword] = callbacks
    return merged


# ---------------------------------------------------------------------------------------------- approvals


def approvals_bundle(framework: Any) -> CallbackBundle:
    """The run's approvals before each of the framework's own tools (their kinds: ``framework.tool_kinds``)."""

    def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> Optional[dict[str, Any]]:
        kind = framework.tool_kinds.get(tool.name)
        if kind is None:  # the user's tools (asked on the host's path), transfer_to_agent, an unknown name
            return None
        summary = framework.tool_summary(tool.name, args)
        request = ApprovalRequest(tool.name, kind, summary, {"arguments": dict(args), "agent": tool_context.agent_name},
                                  run_id=framework.run_id)
        refusal = framework.approvals.check(request)
        if refusal is None:
            return None
        return {"ok": False, "output": refusal, "refused": True}

    return CallbackBundle("approvals", before_tool=[before_tool])


# ---------------------------------------------------------------------------------------------- metadata


def metadata_bundle(framework: Any) -> CallbackBundle:
    """Timing, the tools' metadata on their results, the session metrics, contexts and sub-LM calls in the state."""
    metrics: SessionMetrics = framework.metrics
    model_started: dict[str, float] = {}
    tool_started: dict[str, tuple[float, int]] = {}

    def before_model(callback_context: Any, llm_request: Any) -> None:
        model_started[callback_context.agent_name] = time.monotonic()
        return None

    def after_model(callback_context: Any, llm_response: Any) -> None:
        started = model_started.pop(callback_context.agent_name, None)
        metrics.model_calls += 1
        if started is not None:
            metrics.model_latency_ms = round(metrics.model_latency_ms + (time.monotonic() - started) * 1000, 1)
        callback_context.state[STATE_METRICS] = metrics.to_dict()
        return None

    def on_model_error(callback_context: Any, llm_request: Any, error: Exception) -> None:
        metrics.model_errors += 1
        return None  # the error propagates: the run records it

    def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
        tool_started[_call_id(tool_context)] = (time.monotonic(), len(framework.meter.calls))
        return None

    def after_tool(tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> Optional[dict]:
        if tool_response is None:  # transfer_to_agent: nothing ran here
            return None
        if not isinstance(tool_response, dict):  # an agent called as a tool (context_loader) answers text
            tool_response = {"result": tool_response}
        started, first_call = tool_started.pop(_call_id(tool_context), (time.monotonic(), len(framework.meter.calls)))
        facts = framework.facts.pop(_call_id(tool_context), {})
        refused = bool(tool_response.get("refused"))
        failed = tool_response.get("ok") is False or "error" in tool_response
        sub_calls = [SubLMCallMetadata(**call) for call in framework.meter.calls[first_call:]]
        meta = ToolMetadata(tool=tool.name, agent=tool_context.agent_name,
                            status="refused" if refused else "error" if failed else "success",
                            latency_ms=round((time.monotonic() - started) * 1000, 1),
                            error_type=facts.get("error_type"), variables_created=facts.get("variables_created", []),
                            sub_lm_calls=sub_calls, context=facts.get("context"))
        metrics.tool_calls += 1
        metrics.tool_errors += int(failed and not refused)
        metrics.tools_refused += int(refused)
        if not refused:
            metrics.code_executions += int(tool.name == "rlm_execute_code")
            metrics.context_queries += int(tool.name == "rlm_query_context")
        metrics.sub_lm_calls = len(framework.meter.calls)
        if meta.context is not None:
            metrics.contexts_loaded += 1
            framework.contexts.append(meta.context.to_dict())
            tool_context.state[STATE_CONTEXTS] = list(framework.contexts)
        if sub_calls:
            tool_context.state[STATE_SUB_CALLS] = list(framework.meter.calls)
        tool_context.state[STATE_METRICS] = metrics.to_dict()
        return {**tool_response, "metadata": meta.to_dict()}

    def after_agent(callback_context: Any) -> None:
        if callback_context.agent_name == framework.root_name:
            callback_context.state[STATE_METRICS] = metrics.to_dict()
        return None

    return CallbackBundle("metadata", before_model=[before_model], after_model=[after_model],
                          on_model_error=[on_model_error], before_tool=[before_tool], after_tool=[after_tool],
                          after_agent=[after_agent])


def _call_id(tool_context: Any) -> str:
    return str(getattr(tool_context, "function_call_id", None) or id(tool_context))


# ---------------------------------------------------------------------------------------------- logging


def logging_bundle(framework: Any) -> CallbackBundle:
    """Each model call and tool call at info level (the ``rlm.adk`` logger, which rlm's ``-v`` shows)."""
    import logging

    log = logging.getLogger("rlm.adk")

    def before_model(callback_context: Any, llm_request: Any) -> None:
        log.info("adk model call: agent %s, run %s, %d contents", callback_context.agent_name, framework.run_id,
                 len(getattr(llm_request, "contents", None) or []))
        return None

    def before_tool(tool: Any, args: dict[str, Any], tool_context: Any) -> None:
        shown = {k: (v if len(str(v)) <= 200 else str(v)[:200] + "…") for k, v in dict(args).items()}
        log.info("adk tool call: agent %s, tool %s, args %r, run %s", tool_context.agent_name, tool.name, shown,
                 framework.run_id)
        return None

    def after_tool(tool: Any, args: dict[str, Any], tool_context: Any, tool_response: Any) -> None:
        ok = not (isinstance(tool_response, dict) and (tool_response.get("ok") is False or "error" in tool_response))
        log.info("adk tool result: agent %s, tool %s, ok %s, run %s", tool_context.agent_name, tool.name, ok,
                 framework.run_id)
        return None

    return CallbackBundle("logging", before_model=[before_model], before_tool=[before_tool], after_tool=[after_tool])
