"""The call shape of the authors' official package (PyPI ``rlms``, import name ``rlm``), over our engine.

A program written for it switches by changing one import — ``from rlm import RLM`` becomes
``from rlm_compat_rlms import RLM`` (the name ``rlm`` stays theirs: both can be installed side by side)::

    rlm = RLM(backend="openai", backend_kwargs={"model_name": "gpt-4o-mini"}, environment="local",
              max_iterations=10, max_depth=1)
    answer = rlm.completion(prompt=long_document, root_prompt="What changed in 2021?").response

What maps to what: ``backend`` + ``backend_kwargs["model_name"]`` → our ``provider:model``, its ``api_key`` and
``base_url`` go to the root model's connector only (never into the environment, never to another backend);
``other_backends[0]`` / ``other_backend_kwargs[0]`` → the sub-model, whose connector gets that entry's own
``api_key`` and ``base_url`` (without a key, its provider's usual variable); ``environment`` → our sandbox
(their ``local`` runs model code in the host process, so it becomes our best installed sandbox; other names are
our sandbox names); ``max_iterations`` → ``max_steps``; ``max_depth`` counts the root too (their 1 = no
recursion = our 0); ``max_budget`` / ``max_timeout`` / ``max_tokens`` → ``max_cost`` / ``timeout`` /
``max_tokens``. ``logger`` and ``verbose`` are accepted and unused: every run is recorded in ``.rlm/runs``
(``rlm runs export ID --format rlms`` writes their log format). Options that would change the loop's behaviour
in ways we do not reproduce (``custom_tools``, ``persistent``, ``compaction``…) raise a ``TypeError`` naming them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

#: Their backend names that are our provider names as they are (others: a TypeError naming ours).
BACKENDS = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini", "openrouter": "openrouter",
            "vllm": "vllm", "litellm": "openai", "azure_openai": None, "portkey": None}  # fmt: skip
UNSUPPORTED = ("environment_kwargs", "custom_system_prompt", "tool_prompts", "tool_code", "persistent", "custom_tools",
               "custom_sub_tools", "compaction", "max_errors", "depth")  # fmt: skip
IGNORED = ("logger", "verbose", "on_subcall_start", "on_subcall_complete", "on_iteration_start",
           "on_iteration_complete", "compaction_threshold_pct")  # fmt: skip


@dataclass
class ModelUsageSummary:
    total_calls: int = 0
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    total_cost: Optional[float] = None


@dataclass
class UsageSummary:
    model_usage_summaries: dict[str, ModelUsageSummary] = field(default_factory=dict)

    @property
    def total_input_tokens(self) -> int:
        return sum(m.total_input_tokens for m in self.model_usage_summaries.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(m.total_output_tokens for m in self.model_usage_summaries.values())

    @property
    def total_cost(self) -> Optional[float]:
        costs = [m.total_cost for m in self.model_usage_summaries.values() if m.total_cost is not None]
        return sum(costs) if costs else None


@dataclass
class RLMChatCompletion:
    """Their completion record; ``run`` is our whole ``RunResult`` (trajectory path, termination reason…)."""

    root_model: str
    prompt: Any
    response: str
    usage_summary: UsageSummary
    execution_time: float
    metadata: Optional[dict] = None
    run: Any = None

    def to_dict(self) -> dict[str, Any]:
        usage = {m: vars(u) for m, u in self.usage_summary.model_usage_summaries.items()}
        return {"root_model": self.root_model, "prompt": self.prompt, "response": self.response,
                "usage_summary": {"model_usage_summaries": usage}, "execution_time": self.execution_time}  # fmt: skip


def _model(backend: str, kwargs: Optional[dict[str, Any]]) -> tuple[Optional[str], dict[str, Any]]:
    """(our model string or None for the configured default, the connector settings the kwargs carry)."""
    if backend not in BACKENDS or BACKENDS[backend] is None:
        choices = ", ".join(k for k, v in BACKENDS.items() if v)
        raise TypeError(f"backend {backend!r} is not supported by rlm_compat_rlms (supported: {choices}; any other "
                        "provider: rlm_host.RLM(model='provider:model'))")  # fmt: skip
    kwargs = dict(kwargs or {})
    name = kwargs.pop("model_name", None)
    extra = {k: kwargs.pop(k) for k in ("base_url", "api_key") if kwargs.get(k) is not None}
    if name is None:
        return None, extra
    if backend == "litellm" and "/" in name:  # litellm's provider/model: our model strings accept it as it is
        return name, extra
    return f"{BACKENDS[backend]}:{name}", extra


class RLM:
    """The official ``RLM`` constructor and ``completion(prompt, root_prompt)``, running on ``rlm_host.RLM``."""

    def __init__(self, backend: str = "openai", backend_kwargs: Optional[dict[str, Any]] = None,
                 environment: str = "local", max_depth: int = 1, max_iterations: int = 30,
                 max_budget: Optional[float] = None, max_timeout: Optional[float] = None,
                 max_tokens: Optional[int] = None, other_backends: Optional[list[str]] = None,
                 other_backend_kwargs: Optional[list[dict[str, Any]]] = None, **kwargs: Any) -> None:  # fmt: skip
        from rlm_host.sdk.embedding import RLM as Engine

        refused = sorted(k for k in kwargs if k in UNSUPPORTED and kwargs[k] not in (None, False, {}, [], 0))
        unknown = sorted(k for k in kwargs if k not in UNSUPPORTED and k not in IGNORED)
        if refused or unknown:
            raise TypeError(f"rlm_compat_rlms.RLM does not support: {', '.join(refused + unknown)}")
        model, extra = _model(backend, backend_kwargs)
        backends = [(model, extra, "backend_kwargs")]
        if other_backends:
            sub = _model(other_backends[0], (other_backend_kwargs or [{}])[0])
            backends.append((*sub, "other_backend_kwargs[0]"))
        for name, kwargs, where in backends:
            if kwargs and name is None:  # a key with no model would go to whatever model is configured
                raise TypeError(f"{where} has {' and '.join(sorted(kwargs))} but no model_name")
        sub_model = backends[1][0] if len(backends) > 1 else None
        self.engine = Engine(model, sandbox="auto" if environment == "local" else environment, max_steps=max_iterations,
                             max_depth=max(0, max_depth - 1), max_cost=max_budget, timeout=max_timeout,
                             max_tokens=max_tokens, sub_model=sub_model)  # fmt: skip
        keyed = {role: _connector(self.engine, name, kwargs)
                 for role, (name, kwargs, _) in zip(("root", "sub"), backends) if kwargs}  # fmt: skip
        self.engine.connectors = keyed or None  # the others: built by the engine, keys from their variables

    def completion(self, prompt: Any, root_prompt: Optional[str] = None) -> RLMChatCompletion:
        """Run over ``prompt`` (the context) with ``root_prompt`` (the question; without one, the model is asked
        to answer what the context asks)."""
        query = root_prompt or "Answer the request contained in the context."
        result = self.engine.completion(prompt, query)
        return _completion(result, prompt)


def _connector(engine: Any, model: str, kwargs: dict[str, Any]) -> Any:
    """``model``'s connector with the ``api_key`` / ``base_url`` of its own backend kwargs, nothing else."""
    from rlm_host.sdk.models import ModelOptions, resolve_connector

    runner = engine.runner
    options = ModelOptions(api_key=kwargs.get("api_key"), base_url=kwargs.get("base_url"),
                           max_tokens=runner.loaded.settings.run.max_reply_tokens)  # fmt: skip
    return resolve_connector(model, host=runner.host, settings=runner.loaded, options=options, home=runner.home)


def _completion(result: Any, prompt: Any) -> RLMChatCompletion:
    usage = UsageSummary()
    for role, model in (("root", result.model), ("sub", "sub-calls")):
        part = getattr(result.usage, role)
        if part.calls:
            usage.model_usage_summaries[model] = ModelUsageSummary(part.calls, part.input_tokens, part.output_tokens,
                                                                   part.cost)  # fmt: skip
    if not result.completed and result.final_response is None and result.error:
        response = f"(no answer: {result.termination_reason}: {result.error})"
    else:
        response = result.final_response or ""
    metadata = {"run_id": result.run_id, "trajectory_path": result.trajectory_path,
                "termination_reason": result.termination_reason}  # fmt: skip
    return RLMChatCompletion(result.model, prompt, response, usage, result.duration_s, metadata, result)


__all__ = ["RLM", "RLMChatCompletion", "UsageSummary", "ModelUsageSummary"]
