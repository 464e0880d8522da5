"""The ``plugin-template-agent`` framework: runs a task through an agent framework (``tiny_agent.py``
stands in for yours) and makes it an rlm run like any other: the run's models, its sandbox, its steps.

The factory is called once per run as ``TinyAgentFramework(settings, ctx)`` with a ``FrameworkContext``; ``run()``
drives the framework to its end and returns a ``FrameworkOutcome``. The three rules of every framework:

- **Models: wrap ours.** ``ctx.root`` is the run's model (usage, cost, budgets, retries, replay are counted
  there): ``RootModel`` gives the framework the model interface it expects over it. Never map provider names or
  set API-key variables.
- **Sandbox: ``ctx.tools``.** ``ctx.tools.run_code(code)`` runs code in the run's sandbox session, where
  ``context`` holds the context and ``llm_query`` reaches the sub-model. Code never runs on the host.
- **Steps as they happen.** Each framework event becomes ``ctx.step(...)`` when it happens. Once ``max_steps``
  root turns are used ``ctx.root.complete`` raises ``StepLimitReached``: let it (and ``BudgetExceeded``)
  propagate out of the framework, and the run ends with that reason.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import ConfigDict, Field
from rlm_host.sdk.frameworks import FrameworkContext, FrameworkOutcome, FrameworkRewards


class AgentSettings(FrameworkRewards):
    """``[framework.plugin-template-agent]`` in rlm.toml. Subclassing ``FrameworkRewards`` gives it the event
    rewards (``reward_tool_call = 0.02``…) that ``ctx.reward_for(kind)`` reads."""

    model_config = ConfigDict(extra="forbid")

    instructions: str = Field("Look at `context` with run_code before you answer.",
                              description="what the agent is told besides the tool protocol")


class RootModel:
    """The run's root model in the shape the framework calls: ``generate(messages) -> str``."""

    def __init__(self, ctx: FrameworkContext) -> None:
        self.ctx = ctx

    def generate(self, messages: list[dict[str, str]]) -> str:
        return self.ctx.root.complete(messages).text or ""


class TinyAgentFramework:
    name = "plugin-template-agent"

    def __init__(self, settings: Optional[AgentSettings], ctx: FrameworkContext) -> None:
        self.ctx = ctx
        self.settings = settings or AgentSettings()
        self.code, self.code_ok = "", True

    def run(self) -> FrameworkOutcome:
        from rlm_plugin_template.tiny_agent import TinyAgent  # the framework: imported when a run uses it

        agent = TinyAgent(RootModel(self.ctx), {"run_code": self._run_code}, self.settings.instructions,
                          on_event=self._on_event)
        meta = self.ctx.context_meta
        task = f"{self.ctx.task}\n(`context` is a {meta.get('type')} of {meta.get('total_chars', 0):,} characters.)"
        try:
            return FrameworkOutcome(agent.run(task))
        except _Answered as answered:  # FINAL(...) called inside run_code
            return FrameworkOutcome(answered.answer)

    def _run_code(self, code: str) -> str:
        outcome = self.ctx.tools.run_code(code)
        self.code, self.code_ok = code, outcome.ok
        if outcome.final is not None:
            self.ctx.step("final", {"output": outcome.text}, self.ctx.reward_for("final"), code=code)
            raise _Answered(outcome.final)
        return outcome.text

    def _on_event(self, kind: str, data: dict[str, Any]) -> None:
        """One framework event, one step of the run, recorded now (``reward_for``: this framework's settings)."""
        if kind == "tool_call":
            self.ctx.step("tool_call", {"tool": data["tool"]}, self.ctx.reward_for("tool_call"), code=data["input"],
                          reply=data["reply"])
        elif kind == "tool_result":
            block = {"code": self.code, "stdout": data["output"]}  # `blocks`: what `rlm run` shows of a step
            self.ctx.step("tool_result", {"blocks": [block]}, self.ctx.reward_for("tool_result", self.code_ok))
        elif kind == "retry":
            self.ctx.step("retry", {"error": data["error"]}, self.ctx.reward_for("retry"), reply=data["reply"])
        elif kind == "final":
            self.ctx.step("final", {"answer": data["answer"]}, self.ctx.reward_for("final"), reply=data["reply"])

    def close(self) -> None:
        """The sandbox session is the runner's to close; nothing else is held."""


class _Answered(Exception):
    """Stops the framework when the code in the sandbox gave the final answer."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer
