"""The framework adapter contract: how another agent framework (DSPy, Pydantic AI, ADK…) runs a task as an rlm run.

The runner builds a :class:`FrameworkContext` and calls the adapter's factory as ``factory(settings, ctx)``; the
adapter's ``run()`` drives the framework to the end and returns a :class:`FrameworkOutcome`. Three rules make a
framework run the same thing as a native one:

- **Our models, through the framework's model interface.** ``ctx.root`` / ``ctx.sub`` are the run's model
  roles (usage, cost, retries, budgets, record-and-replay are the runner's); the adapter wraps them as a
  ``dspy.BaseLM``, a pydantic-ai ``Model``… never by guessing provider names or setting environment variables.
- **Our sandbox, through the framework's tools.** ``ctx.tools`` (:class:`~rlm_host.frameworks.tools.SandboxTools`)
  runs code in the run's sandbox session with ``context`` loaded and ``llm_query`` / ``llm_query_batched`` there.
- **Steps as they happen.** The adapter calls ``ctx.step(...)`` for each event (a model turn, a tool call and its
  result…) as the framework produces it; the runner records it (trajectory, sinks, live view) with the model
  usage since the previous step.

``max_steps`` means what it means for a native run: root model turns. ``ctx.root.complete`` raises
:class:`StepLimitReached` when the framework asks for one turn more, and ``ctx.step`` raises ``BudgetExceeded``
once the run's sub-model calls are used up (``max_llm_calls``); the adapter lets both propagate out of the
framework, which ends the run cleanly with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Protocol, TypeVar

from rlm_host.config.schema import RewardProfile
from rlm_host.environments.protocol import BudgetView, Emitter, ModelRole
from rlm_host.errors import RlmError
from rlm_host.sandbox.protocol import SandboxLimits


class StepLimitReached(RlmError):
    """Raised by ``FrameworkContext.root.complete`` when the run's ``max_steps`` root turns are used: the framework
    must stop."""


class TurnLimitedRole:
    """A model role that allows ``max_turns`` calls and raises StepLimitReached at the next one."""

    def __init__(self, role: Any, max_turns: int) -> None:
        self._role = role
        self._max_turns = max_turns
        self.turns = 0

    def complete(self, messages: Any, purpose: Any = None, **kwargs: Any) -> Any:
        if self.turns >= self._max_turns:
            raise StepLimitReached(f"the run's {self._max_turns} root turns (max_steps) are used")
        self.turns += 1
        return self._role.complete(messages, purpose=purpose, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._role, name)


@dataclass
class FrameworkOutcome:
    """How the framework's run ended: its answer (None if it gave none) and anything worth keeping.
    ``termination_reason`` for a run that did not complete (default ``max_steps``: the framework gave up)."""

    final_response: Optional[str]
    completed: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)
    termination_reason: Optional[str] = None


@dataclass
class FrameworkContext:
    """Everything an adapter may use (the ``services`` of its factory).

    ``step(action, observation=None, reward=0.0, code=None, reply=None)`` records one step now and returns the
    reward the runner kept (clamped, scaled); ``tools`` is the run's sandbox as tools (opened on first use,
    closed by the runner); ``reward_for(kind)`` is the seeds' reward of a framework event kind.
    """

    task: str
    context: Any
    context_meta: dict[str, Any]
    root: ModelRole
    sub: ModelRole
    sub_model_for: Callable[[str], ModelRole]
    tools: Any  # rlm_host.frameworks.tools.SandboxTools
    budget: BudgetView
    rewards: RewardProfile
    limits: SandboxLimits
    scope: Emitter
    max_steps: int
    max_depth: int
    step: Callable[..., float]

    def reward_for(self, kind: str, ok: bool = True) -> float:
        """The reward of a framework event kind (the seeds' table): a tool call that ran, a model turn…"""
        return event_reward(self.rewards, kind, ok)


class FrameworkAdapter(Protocol):
    """One framework run. ``run()`` blocks until the framework is done; ``close()`` frees what it holds."""

    name: str

    def run(self) -> FrameworkOutcome: ...

    def close(self) -> None: ...


#: Event kinds an adapter reports, and the ``[rewards]`` field giving each its reward (the seeds' adapter tables).
EVENT_REWARDS = {
    "tool_call": "framework_tool_call", "planning_tool_call": "framework_planning_tool_call",
    "tool_result": "framework_tool_result", "tool_error": "framework_tool_error", "retry": "framework_retry",
    "model_text": "framework_model_text", "model_response": "framework_model_response",
    "empty_response": "framework_empty_response", "final": "final_reward",
}  # fmt: skip


def event_reward(rewards: RewardProfile, kind: str, ok: bool = True) -> float:
    """The reward of one framework event: its kind's ``[rewards]`` field; a tool result that failed is a
    ``tool_error``. An unknown kind earns nothing."""
    if kind == "tool_result" and not ok:
        kind = "tool_error"
    field_name = EVENT_REWARDS.get(kind)
    return float(getattr(rewards, field_name)) if field_name else 0.0


T = TypeVar("T")


def run_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    """Run an async framework from the runner's (sync) thread: ``asyncio.run`` on the usual thread without a loop;
    called from async code (a notebook, an async program), on a thread and a loop of its own."""
    import asyncio
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()  # type: ignore[arg-type]
