"""The environment protocol and what the runner hands an environment.

An environment plugin registers an ``EnvironmentSpec`` whose factory is called as
``factory(ctx: EnvironmentContext) -> Environment``. Each step the runner asks ``messages()``, sends them to the
root model, and passes the reply to ``execute()``; the returned ``ActionResult`` says whether the run is done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

from pydantic import BaseModel

from rlm_host.engine.budget import Budget
from rlm_host.engine.models import ModelClient
from rlm_host.engine.rewards import RewardProfile
from rlm_host.engine.scope import RunScope
from rlm_host.llm.protocol import Completion, Message
from rlm_host.sandbox.protocol import SandboxLimits, SandboxSession
from rlm_host.types import ActionResult, RunResult


class RecursionRefused(Exception):
    """A child run was not started: ``reason`` is "max_depth" or "cycle"."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class EnvironmentContext:
    """Everything an environment may use.

    ``spawn_child(task, context)`` runs a child RLM one level deeper (sharing the budget) and returns its
    RunResult, or raises RecursionRefused; ``sub_model_for("provider:model")`` is a sub-role client for another
    model (``llm_query(prompt, model=...)``).
    """

    task: str
    context: Any
    scope: RunScope
    root: ModelClient
    sub: ModelClient
    budget: Budget
    rewards: RewardProfile
    limits: SandboxLimits
    open_sandbox: Callable[[], SandboxSession]
    spawn_child: Callable[[str, Any], RunResult]
    sub_model_for: Callable[[str], ModelClient]
    max_steps: int
    max_depth: int
    settings: Optional[BaseModel] = None


class Environment(Protocol):
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
