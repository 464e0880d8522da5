"""The environment protocol and what the runner hands an environment.

An environment plugin registers an ``EnvironmentSpec`` whose factory is called as ``factory(settings, ctx:
EnvironmentContext) -> Environment``. Each step the runner asks ``messages()``, sends them to the root model,
and passes the reply to ``execute()``; the returned ``ActionResult`` says whether the run is done.

The context's members are typed by the small protocols below, not by the engine's classes: this module sits
under the engine, which implements them (``ModelClient``, ``Budget``, ``RunScope``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from rlm_host.approvals import ALLOW_ALL, Approvals
from rlm_host.config.schema import RewardProfile
from rlm_host.models.protocol import Completion, Message, Purpose, ReplyFormat
from rlm_host.results import ActionResult, RunResult
from rlm_host.sandbox.protocol import SandboxLimits, SandboxSession

__all__ = ["BudgetView", "Emitter", "Environment", "EnvironmentContext", "ModelRole", "reply_format_of"]


class ModelRole(Protocol):
    """A model bound to a role of the run (root or sub): usage counted, budget enforced, retries reported."""

    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str:
        """The provider as OpenTelemetry names it (``gen_ai.provider.name``), for the events naming the model."""

    @property
    def context_window(self) -> Optional[int]: ...

    def count_tokens(self, text: str) -> int:
        """The tokens of ``text`` for this model: exact when its connector can count, else estimated."""

    def complete(self, messages: list[Message], purpose: Optional[Purpose] = None,
                 reply_format: Optional[ReplyFormat] = None) -> Completion: ...


class BudgetView(Protocol):
    """The run tree's budget as an environment sees it."""

    def check(self) -> None:
        """Raise ``BudgetExceeded`` when the run must stop (time, tokens, cost, cancellation)."""

    def take_llm_call(self) -> int:
        """Count one sub-model call; ``BudgetExceeded`` once ``max_llm_calls`` are used."""

    def remaining(self) -> float:
        """Seconds left before the run's wall-clock limit."""

    @property
    def max_llm_calls(self) -> int:
        """Sub-model calls allowed in the run tree."""


class Emitter(Protocol):
    """Where an environment emits its own events (``sub_call``, ``compaction``…) for the run it belongs to."""

    @property
    def run_id(self) -> str: ...

    @property
    def depth(self) -> int: ...

    def emit(self, type_: Any, data: dict[str, Any]) -> Any: ...


@dataclass
class EnvironmentContext:
    """Everything an environment may use (the ``services`` of its factory).

    ``context_meta`` is the context's description (``rlm_host.context.describe_context``), computed once per
    run: use it rather than describing ``context`` again. ``spawn_child(task, context)`` runs a child RLM one
    level deeper (sharing the budget) and returns its RunResult, or raises ``RecursionRefused``;
    ``sub_model_for("provider:model")`` is a sub-role model for another model (``llm_query(prompt, model=...)``).
    ``workdir``: the run's project folder, resolved (``--workdir``; set for environments whose spec says
    ``workspace=True``, where the sandbox session has it as its read-write working directory).
    ``build_environment(name, ctx)`` builds another registered environment with its configured settings (an
    environment that wraps or drives another one uses it; never the global plugin host).
    """

    task: str
    context: Any
    scope: Emitter
    root: ModelRole
    sub: ModelRole
    budget: BudgetView
    rewards: RewardProfile
    limits: SandboxLimits
    open_sandbox: Callable[[], SandboxSession]
    spawn_child: Callable[[str, Any], RunResult]
    sub_model_for: Callable[[str], ModelRole]
    max_steps: int
    max_depth: int
    context_meta: dict[str, Any] = field(default_factory=dict)
    workdir: Optional[Path] = None
    instructions: Optional[str] = None  # the user's domain guidance: appended to the system prompt, never replacing it
    carry: Optional[Any] = None  # the root run of a chat turn: variables carried between turns (engine.carry)
    #: (name, ctx) → that registered environment, created with its configured ``[environment.NAME]`` settings
    environment_builder: Optional[Callable[[str, "EnvironmentContext"], "Environment"]] = field(default=None,
                                                                                                repr=False)
    #: ``approvals.check(ApprovalRequest(tool, kind, summary))`` before an action that changes things: None, or
    #: the refusal the model sees as the action's observation (``[run] approve``, ``rlm_host.approvals``)
    approvals: Approvals = field(default=ALLOW_ALL, repr=False)
    #: the user's own functions offered in the REPL (``[run] tools``: ``rlm_host.environments.repl_tools``), and
    #: how long one call of them may take
    tools: tuple[Any, ...] = ()
    tool_timeout: float = 30.0
    #: ``[run] nudge_first_answer``: a REPL environment refuses once a FINAL given at step 1 before any code ran
    nudge_first_answer: bool = True
    #: ``[run] allow_any_workdir``: ``guarded_folder`` lets a home, documents or system folder through
    allow_any_workdir: bool = False
    #: the type the final answer must have (``[run] output_type``: an ``OutputType``, whose ``parse`` raises
    #: ``OutputInvalid``; None: any answer), for the root run only
    output: Optional[Any] = None

    def step_timeout(self) -> float:
        """How long one code execution may take: the sandbox's ``exec_timeout``, cut to what the run's wall clock
        has left (at least half a second, so the step still runs and reports the timeout)."""
        return max(0.5, min(self.limits.exec_timeout, self.budget.remaining()))

    def guarded_folder(self, folder: Optional[Path] = None, doing: str = "work with the files of") -> Path:
        """``folder`` (default: the working directory) resolved, for an environment that reads or writes files of
        the host there outside the sandbox: refused (``ConfigError``) when it is a home, documents or system
        folder, unless the run allows any (``--allow-any-workdir``), as a project folder is."""
        from rlm_host.config.protected import guard_folder

        return guard_folder(folder if folder is not None else Path.cwd(), self.allow_any_workdir, doing)

    def build_environment(self, name: str, ctx: Optional["EnvironmentContext"] = None) -> "Environment":
        """The registered environment ``name`` (an alias works too), created as a run would create it: with the
        configured ``[environment.NAME]`` settings and, as its context, ``ctx`` (this context when None; usually
        ``dataclasses.replace(self, ...)`` with what the outer environment changes, e.g. ``open_sandbox``).
        rlm-env-dspy drives ``generic`` this way, rlm-env-traces is ``pure_rlm`` given trace functions."""
        if self.environment_builder is None:
            raise RuntimeError("this EnvironmentContext cannot build environments (no environment_builder given)")
        return self.environment_builder(name, self if ctx is None else ctx)


class Environment(Protocol):
    """One kind of RLM loop. Optional too: a ``reply_format`` attribute (a :class:`ReplyFormat`, or None), the
    shape the root model's replies must have; the runner hands it to connectors that can enforce it (a GBNF
    grammar, a JSON schema) as ``[run] reply_format`` says. Replies that break it must still be handled."""

    name: str

    def start(self) -> None:
        """Open the sandbox session and prepare the first prompt."""

    def messages(self, step: int) -> list[Message]:
        """The prompt for this step."""

    def execute(self, reply: Completion, step: int) -> ActionResult:
        """Act on the root model's reply: run code, detect the final answer, compute the reward."""

    def synthesize(self) -> Optional[str]:
        """Steps ran out: one more model call for the best answer the trajectory supports (None if impossible)."""

    def close(self) -> None:
        """Release the sandbox session (idempotent)."""


def reply_format_of(environment: Any) -> Optional[ReplyFormat]:
    """The environment's ``reply_format``, None when it declares none."""
    value = getattr(environment, "reply_format", None)
    return value if isinstance(value, ReplyFormat) else None
