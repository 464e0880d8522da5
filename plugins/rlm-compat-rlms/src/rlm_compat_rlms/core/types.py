"""The records of the authors' ``rlm.core.types`` (rlms 0.1.3): what ``completion`` returns, what the logger
keeps, and their ``to_dict`` / ``from_dict`` forms, field for field, so code and logs written for that package read
them unchanged.

``RLMChatCompletion`` has one field more, ``run``: rlm's ``RunResult`` of the completion (trajectory path,
termination reason, steps), left out of ``to_dict``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal, Optional

#: The backends ``RLM(backend=...)`` takes (rlms' names, and ``litellm`` that earlier versions of this layer took).
ClientBackend = Literal["openai", "portkey", "openrouter", "vercel", "vllm", "anthropic", "azure_openai", "gemini",
                        "litellm"]
#: rlms' environment names; rlm's own sandbox names (``monty``, ``process``, ``docker``…) are accepted too.
EnvironmentType = Literal["local", "ipython", "docker", "modal", "prime", "daytona", "e2b", "monty", "process"]


def _serialize_value(value: Any) -> Any:
    """``value`` as JSON data for a log: plain data as it is, a module or function as a short label, any other
    object as its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, ModuleType):
        return f"<module '{value.__name__}'>"
    if isinstance(value, (list, tuple)):
        return [_serialize_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _serialize_value(item) for key, item in value.items()}
    if callable(value):
        return f"<{type(value).__name__} '{getattr(value, '__name__', repr(value))}'>"
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


@dataclass
class ModelUsageSummary:
    """Calls and tokens of one model (and its cost in USD, when known)."""

    total_calls: int
    total_input_tokens: int
    total_output_tokens: int
    total_cost: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"total_calls": self.total_calls, "total_input_tokens": self.total_input_tokens,
                               "total_output_tokens": self.total_output_tokens}
        if self.total_cost is not None:
            out["total_cost"] = self.total_cost
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelUsageSummary":
        return cls(total_calls=data.get("total_calls", 0), total_input_tokens=data.get("total_input_tokens", 0),
                   total_output_tokens=data.get("total_output_tokens", 0),
                   total_cost=data.get("total_cost"))


def added(first: ModelUsageSummary, second: ModelUsageSummary) -> ModelUsageSummary:
    """Two usages of one model as one: calls and tokens added, the cost too when either knows it."""
    costs = [c for c in (first.total_cost, second.total_cost) if c is not None]
    return ModelUsageSummary(first.total_calls + second.total_calls,
                             first.total_input_tokens + second.total_input_tokens,
                             first.total_output_tokens + second.total_output_tokens, sum(costs) if costs else None)


@dataclass
class UsageSummary:
    """Usage per model name; the totals add them up (the cost only over the models whose cost is known)."""

    model_usage_summaries: dict[str, ModelUsageSummary] = field(default_factory=dict)

    @property
    def total_cost(self) -> Optional[float]:
        costs = [m.total_cost for m in self.model_usage_summaries.values() if m.total_cost is not None]
        return sum(costs) if costs else None

    @property
    def total_input_tokens(self) -> int:
        return sum(m.total_input_tokens for m in self.model_usage_summaries.values())

    @property
    def total_output_tokens(self) -> int:
        return sum(m.total_output_tokens for m in self.model_usage_summaries.values())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model_usage_summaries": {name: usage.to_dict() for name, usage in
                                                         self.model_usage_summaries.items()}}
        if self.total_cost is not None:
            out["total_cost"] = self.total_cost
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "UsageSummary":
        usages = (data or {}).get("model_usage_summaries", {})
        return cls(model_usage_summaries={name: ModelUsageSummary.from_dict(usage) for name, usage in usages.items()})


@dataclass
class RLMChatCompletion:
    """One completion: the root model, the prompt (the context), the answer, usage and time; ``metadata`` is the
    logger's trajectory (None without a logger), ``error`` set when this call failed; ``run`` is rlm's RunResult."""

    root_model: str
    prompt: Any
    response: str
    usage_summary: UsageSummary
    execution_time: float
    metadata: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    run: Any = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out = {"root_model": self.root_model, "prompt": self.prompt, "response": self.response,
               "usage_summary": self.usage_summary.to_dict(), "execution_time": self.execution_time}
        if self.metadata is not None:
            out["metadata"] = self.metadata
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RLMChatCompletion":
        return cls(root_model=data.get("root_model", ""), prompt=data.get("prompt"), response=data.get("response", ""),
                   usage_summary=UsageSummary.from_dict(data.get("usage_summary") or {}),
                   execution_time=data.get("execution_time", 0.0), metadata=data.get("metadata"),
                   error=data.get("error"))


class REPLResult:
    """What one code block did: its output, the REPL's variables after it (``{}`` here: rlm does not copy them
    out of the sandbox), its time, the sub-calls it made and the final answer it gave, if any."""

    def __init__(self, stdout: str, stderr: str, locals: dict[str, Any], execution_time: Optional[float] = None,
                 rlm_calls: Optional[list[RLMChatCompletion]] = None, final_answer: Optional[str] = None):
        self.stdout = stdout
        self.stderr = stderr
        self.locals = locals
        self.execution_time = execution_time
        self.rlm_calls = list(rlm_calls or [])
        self.final_answer = final_answer

    def __repr__(self) -> str:
        return (f"REPLResult(stdout={self.stdout}, stderr={self.stderr}, locals={self.locals}, "
                f"execution_time={self.execution_time}, rlm_calls={len(self.rlm_calls)})")

    __str__ = __repr__

    def to_dict(self) -> dict[str, Any]:
        return {"stdout": self.stdout, "stderr": self.stderr,
                "locals": {name: _serialize_value(value) for name, value in self.locals.items()},
                "execution_time": self.execution_time, "rlm_calls": [call.to_dict() for call in self.rlm_calls],
                "final_answer": self.final_answer}


@dataclass
class CodeBlock:
    """A ```repl block of a reply and what running it gave."""

    code: str
    result: REPLResult

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "result": self.result.to_dict()}


@dataclass
class RLMIteration:
    """One root turn: the messages sent, the reply, its code blocks, the final answer if it gave one."""

    prompt: Any
    response: str
    code_blocks: list[CodeBlock]
    final_answer: Optional[str] = None
    iteration_time: Optional[float] = None

    def to_dict(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "response": self.response,
                "code_blocks": [block.to_dict() for block in self.code_blocks], "final_answer": self.final_answer,
                "iteration_time": self.iteration_time}


@dataclass
class RLMMetadata:
    """How an ``RLM`` was configured: the logger's first line."""

    root_model: str
    max_depth: int
    max_iterations: int
    backend: str
    backend_kwargs: dict[str, Any]
    environment_type: str
    environment_kwargs: dict[str, Any]
    other_backends: Optional[list[str]] = None

    def to_dict(self) -> dict[str, Any]:
        return {"root_model": self.root_model, "max_depth": self.max_depth, "max_iterations": self.max_iterations,
                "backend": self.backend,
                "backend_kwargs": {k: _serialize_value(v) for k, v in self.backend_kwargs.items()},
                "environment_type": self.environment_type,
                "environment_kwargs": {k: _serialize_value(v) for k, v in self.environment_kwargs.items()},
                "other_backends": self.other_backends}


class QueryMetadata:
    """The shape of a prompt (the context) as the root model is told it: its type, total length and the length of
    each part (each string of a list, each value of a dict, each message's content)."""

    def __init__(self, prompt: Any):
        if isinstance(prompt, str):
            self.context_type, lengths = "str", [len(prompt)]
        elif isinstance(prompt, dict):
            self.context_type, lengths = "dict", [_length(part) for part in prompt.values()]
        elif isinstance(prompt, list):
            self.context_type = "list"
            if not prompt:
                lengths = [0]
            elif isinstance(prompt[0], dict) and "content" in prompt[0]:
                lengths = [len(str(part.get("content", ""))) for part in prompt]
            else:
                lengths = [_length(part) for part in prompt]
        else:
            raise ValueError(f"Invalid prompt type: {type(prompt)} (give a str, a list or a dict)")
        self.context_lengths: list[int] = lengths
        self.context_total_length: int = sum(lengths)

    def __repr__(self) -> str:
        return (f"QueryMetadata(context_type={self.context_type!r}, context_total_length={self.context_total_length},"
                f" context_lengths={self.context_lengths})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QueryMetadata) and vars(self) == vars(other)


def _length(part: Any) -> int:
    """A part's length: a string's own, anything else's as JSON (its repr when JSON cannot hold it)."""
    if isinstance(part, str):
        return len(part)
    try:
        return len(json.dumps(part, default=str))
    except (TypeError, ValueError):
        return len(repr(part))


__all__ = ["ClientBackend", "EnvironmentType", "ModelUsageSummary", "UsageSummary", "RLMChatCompletion", "REPLResult",
           "CodeBlock", "RLMIteration", "RLMMetadata", "QueryMetadata"]
