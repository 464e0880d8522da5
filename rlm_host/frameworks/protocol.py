"""The framework contract: how another agent framework (DSPy, Pydantic AI, ADK…) runs a task as an rlm run.

The runner builds a :class:`FrameworkContext` and calls the framework's factory as ``factory(settings, ctx)``;
the :class:`Framework` it returns drives the agent framework to the end in ``run()`` and returns a
:class:`FrameworkOutcome`. Four rules make a framework run the same thing as a native one:

- **Our models, through the framework's model interface.** ``ctx.root`` / ``ctx.sub`` are the run's model
  roles (usage, cost, retries, budgets, record-and-replay are the runner's); the framework wraps them as a
  ``dspy.BaseLM``, a pydantic-ai ``Model``… never by guessing provider names or setting environment variables.
- **Our sandbox, through the framework's tools.** ``ctx.tools`` (:class:`~rlm_host.frameworks.tools.SandboxTools`)
  runs code in the run's sandbox session with ``context`` loaded and ``llm_query`` / ``llm_query_batched`` there.
- **The user's tools and answer type, the framework's way.** ``ctx.tools.user_tools`` are the user's functions as
  plain callables for the agent's own tools (each call through the run's approvals, timeout and ``tool_call``
  event); ``ctx.output`` the type the answer must have: the agent framework's structured output where it has one,
  and the answer checked with ``typed_answer`` (a mismatch is sent back to the model, as in a native run).
- **Steps as they happen.** The framework calls ``ctx.step(...)`` for each event (a model turn, a tool call and its
  result…) as the framework produces it; the runner records it (trajectory, sinks, live view) with the model
  usage since the previous step.

``max_steps`` means what it means for a native run: root model turns. ``ctx.root.complete`` raises
:class:`StepLimitReached` when the framework asks for one turn more, and ``ctx.step`` raises ``BudgetExceeded``
once the run's sub-model calls are used up (``max_llm_calls``); the framework lets both propagate out of
the agent framework it drives, which ends the run cleanly with that reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Optional, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from rlm_host.config.schema import RewardProfile
from rlm_host.environments.protocol import EnvironmentContext
from rlm_host.errors import RlmError


class StepLimitReached(RlmError):
    """Raised by ``FrameworkContext.root.complete`` when the run's ``max_steps`` root turns are used: the framework
    must stop."""


class TurnLimitedRole:
    """A model role that allows ``max_turns`` calls and raises StepLimitReached at the next one; ``on_turn`` is
    called before each call (the runner's ``step_start`` for a framework run). One call with
    ``purpose="synthesis"`` is allowed besides the turns: a framework's own answer step once its turns are used
    (dspy.RLM's ``extract``), as a native run makes one; ``purpose="compaction"`` calls are not turns either."""

    def __init__(self, role: Any, max_turns: int, on_turn: Optional[Callable[[], Any]] = None) -> None:
        self._role, self._max_turns, self._on_turn = role, max_turns, on_turn
        self.turns, self.synthesized = 0, False

    def complete(self, messages: Any, purpose: Any = None, **kwargs: Any) -> Any:
        if purpose == "synthesis" and not self.synthesized:
            self.synthesized = True
        elif self.turns >= self._max_turns:
            raise StepLimitReached(f"the run's {self._max_turns} root turns (max_steps) are used")
        elif purpose != "compaction":  # folding the history before a turn (``ChatCompactor``) is not a turn
            self.turns += 1
            if self._on_turn is not None:
                self._on_turn()
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
class FrameworkContext(EnvironmentContext):
    """Everything a framework may use (the ``services`` of its factory): an environment's context — the task, the
    models, the budget, the sandbox, child runs, approvals, the answer's type… (``EnvironmentContext``) — where
    ``tools`` is the run's sandbox as tools, and with two more.

    ``step(action, observation=None, reward=0.0, code=None, reply=None)`` records one step now and returns the
    reward the runner kept (clamped, scaled); ``tools`` is the run's sandbox as tools (opened on first use, closed
    by the runner; the user's own functions are ``tools.user_tools``); ``reward_for(kind)`` is the reward of a
    framework event kind, from the framework's ``settings`` (the run's validated ``[framework.<name>]``, a
    :class:`FrameworkRewards` or None).
    """

    tools: Any = None  # rlm_host.frameworks.tools.SandboxTools
    step: Callable[..., float] = field(default=lambda *args, **kwargs: 0.0, repr=False)
    settings: Any = None  # the framework's settings: its FrameworkRewards weigh the events

    def reward_for(self, kind: str, ok: bool = True) -> float:
        """The reward of a framework event kind: a tool call that ran, a model turn… (``FrameworkRewards``)."""
        return event_reward(self.rewards, kind, ok, self.settings)


class Framework(Protocol):
    """One framework run, as an ``Environment`` is one task's: the factory builds one per run. ``run()`` blocks
    until the agent framework is done; ``close()`` frees what it holds."""

    name: str

    def run(self) -> FrameworkOutcome: ...

    def close(self) -> None: ...


#: Deprecated: the protocol's old name (kept for a release; in no ``__all__``). Use :class:`Framework`.
FrameworkAdapter = Framework


class FrameworkRewards(BaseModel):
    """The rewards of framework events (RLM Code's framework reward tables), one field per event kind: the base
    of every framework's settings model, so ``[framework.<name>] reward_tool_call = 0.05`` weighs that
    framework's runs. A ``final`` step earns ``[rewards] final_reward``, which every environment shares."""

    model_config = ConfigDict(extra="forbid")

    reward_tool_call: float = Field(0.02, description="the framework's model calls a tool")
    reward_planning_tool_call: float = Field(0.03, description="… a planning tool (write_todos, read_todos)")
    reward_tool_result: float = Field(0.06, description="a tool returned")
    reward_tool_error: float = Field(-0.05, description="a tool failed")
    reward_retry: float = Field(-0.05, description="the framework asked the model to retry (validation)")
    reward_model_text: float = Field(0.05, description="the model wrote text (a thought, a part of the answer)")
    reward_model_response: float = Field(0.25, description="a run that yielded no steps but an answer")
    reward_empty_response: float = Field(-0.1, description="a run that yielded neither steps nor an answer")


#: Event kinds a framework reports, and the field giving each its reward: a ``FrameworkRewards`` field of the
#: framework's settings, but ``final``: ``[rewards] final_reward``.
EVENT_REWARDS = {n.removeprefix("reward_"): n for n in FrameworkRewards.model_fields} | {"final": "final_reward"}
_DEFAULT_WEIGHTS = FrameworkRewards()


def event_reward(rewards: RewardProfile, kind: str, ok: bool = True, settings: Any = None) -> float:
    """The reward of one framework event: its kind's field of the framework's ``settings`` (the defaults when
    they are not a ``FrameworkRewards``), ``final`` from ``rewards``; a tool result that failed is a
    ``tool_error``. An unknown kind earns nothing."""
    field_name = EVENT_REWARDS.get("tool_error" if kind == "tool_result" and not ok else kind)
    if field_name is None:
        return 0.0
    own = field_name in FrameworkRewards.model_fields
    weights = (settings if isinstance(settings, FrameworkRewards) else _DEFAULT_WEIGHTS) if own else rewards
    return float(getattr(weights, field_name))


T = TypeVar("T")


def run_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    """Run an async framework from the runner's (sync) thread: ``asyncio.run`` on the usual thread without a loop;
    called from async code (a notebook, an async program), on a helper thread and a loop of its own."""
    import asyncio

    from rlm_host.threads import submit

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())  # type: ignore[arg-type]
    return submit(lambda: asyncio.run(make()), "rlm-framework-loop").result()  # type: ignore[arg-type]
