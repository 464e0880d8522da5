"""Shared result types of a run: token usage per role, what a sandbox returns, steps and the run result."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

#: Version of the run result and trajectory formats (docs/schemas.md). Version 1, which had no such field, named
#: token counts ``prompt_tokens`` / ``completion_tokens``; ``rlm_host.trajectory.compat`` still reads it.
SCHEMA_VERSION = 2


class Usage(BaseModel):
    """Model calls and tokens of one role (root or sub); cost in USD when the price is known.

    Token counts are named as the OpenTelemetry GenAI conventions name them (``gen_ai.usage.input_tokens``).
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Optional[float] = None
    unpriced_calls: int = 0  # calls of unknown cost: ``cost`` then covers only the other calls

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, input_tokens: int, output_tokens: int, cost: float | None = None, calls: int = 1,
            unpriced_calls: Optional[int] = None) -> None:
        """Count ``calls`` calls; without ``unpriced_calls``, all of them are unpriced when ``cost`` is None."""
        self.calls += calls
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        self.unpriced_calls += (calls if cost is None else 0) if unpriced_calls is None else unpriced_calls

    def merge(self, other: "Usage") -> None:
        self.add(other.input_tokens, other.output_tokens, other.cost, calls=other.calls,
                 unpriced_calls=other.unpriced_calls)


class RunUsage(BaseModel):
    """Usage per role: ``root`` is the model driving the loop, ``sub`` every llm_query / child-run call."""

    root: Usage = Field(default_factory=Usage)
    sub: Usage = Field(default_factory=Usage)

    @property
    def total_tokens(self) -> int:
        return self.root.total_tokens + self.sub.total_tokens

    @property
    def cost(self) -> float | None:
        costs = [u.cost for u in (self.root, self.sub) if u.cost is not None]
        return sum(costs) if costs else None

    @property
    def unpriced_calls(self) -> int:
        return self.root.unpriced_calls + self.sub.unpriced_calls


class FinalSignal(BaseModel):
    """How code ended the run: FINAL(answer), FINAL_VAR(name) or SUBMIT(**fields).

    ``value`` is the answer as JSON-compatible data (FINAL_VAR already resolved inside the sandbox).
    """

    kind: Literal["direct", "variable", "submit"]
    value: Any = None
    var: Optional[str] = None


class ExecResult(BaseModel):
    """What one ``execute(code)`` in a sandbox session returned.

    ``error`` holds the exception as the sandbox saw it ("NameError: name 'x' is not defined", with a short
    traceback); ``restarted`` means the session was replaced (timeout, crash, memory) and its variables,
    except those the host set, are gone.
    """

    model_config = ConfigDict(frozen=True)

    stdout: str = ""
    stderr: str = ""
    error: Optional[str] = None
    final: Optional[FinalSignal] = None
    duration_s: float = 0.0
    timed_out: bool = False
    restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


class ActionResult(BaseModel):
    """An environment's verdict on one model reply (RLM Code's EnvironmentActionResult)."""

    action: str
    observation: dict[str, Any] = Field(default_factory=dict)
    reward: float = 0.0
    done: bool = False
    final_response: Optional[str] = None
    memory_note: Optional[str] = None
    code: Optional[str] = None


class StepRecord(BaseModel):
    """One step of a run, as recorded in the trajectory."""

    step: int
    action: str
    code: Optional[str] = None
    reply: Optional[str] = None
    observation: dict[str, Any] = Field(default_factory=dict)
    reward: float = 0.0
    cumulative_reward: float = 0.0
    usage: "RunUsage" = Field(default_factory=lambda: RunUsage())
    model_seconds: float = 0.0
    duration_s: float = 0.0


TerminationReason = Literal["final", "max_steps", "timeout", "budget", "max_llm_calls", "max_errors", "cancelled",
                            "error"]


class RunResult(BaseModel):
    """The outcome of ``RLMRunner.run_task``: the run JSON of ``rlm run --json`` and the ``final`` event's data."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    parent_run_id: Optional[str] = None
    depth: int = 0
    task: str
    environment: str
    framework: str = "native"
    model: str = ""
    sandbox: str = ""
    completed: bool
    final_response: Optional[str] = None
    steps: int = 0
    total_reward: float = 0.0
    usage: RunUsage = Field(default_factory=RunUsage)
    cost: Optional[float] = None
    cost_complete: bool = True  # False when some call's cost is unknown: ``cost`` covers only the priced calls
    duration_s: float = 0.0
    termination_reason: TerminationReason
    error: Optional[str] = None
    trajectory_path: Optional[str] = None
    #: Why the trajectory is incomplete (a write failed: a full disk…), None when every event was written.
    record_error: Optional[str] = None
    #: Under ``--max-cost``, when the cost ended above it (a call's cost is known once it returns): ``limit``,
    #: ``spent``, ``over``, ``step`` (whose calls crossed it) and ``message``; None otherwise.
    over_budget: Optional[dict[str, Any]] = None
    #: What a framework reported about its own run (``FrameworkOutcome.metadata``: adk-rlm's session metrics,
    #: dspy.RLM's iterations…), JSON values; None for a native run.
    framework_metadata: Optional[dict[str, Any]] = None
    #: With ``[run] output_type`` (``--output-schema``): the final answer validated as that type (a pydantic model's
    #: instance, a dataclass, JSON data for a schema); None without one, or when the run ended without a valid answer.
    output: Any = None
