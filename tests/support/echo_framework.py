"""A test-only framework (``RLM_PLUGIN_MODULES=support.echo_framework``): the smallest thing keeping the
framework contract, so the host's side of it is tested without any real framework. Each root reply is Python code
(run in the run's sandbox) or ``ANSWER: text`` (the final answer)."""

from __future__ import annotations

from typing import Any

from rlm_host import FrameworkSpec, hookimpl
from rlm_host.sdk.frameworks import FrameworkOutcome, FrameworkRewards


class EchoSettings(FrameworkRewards):
    """``[framework.echo]``: the event rewards only."""


class EchoFramework:
    name = "echo"

    def __init__(self, settings: Any, ctx: Any) -> None:
        self.ctx = ctx

    def run(self) -> FrameworkOutcome:
        messages = [{"role": "user", "content": f"Task: {self.ctx.task}. Reply with code, or ANSWER: text."}]
        while True:
            reply = self.ctx.root.complete(messages).text or ""
            if reply.startswith("ANSWER:"):
                answer = reply.removeprefix("ANSWER:").strip()
                self.ctx.step("final", {"answer": answer}, self.ctx.reward_for("final"), reply=reply)
                return FrameworkOutcome(answer)
            outcome = self.ctx.tools.run_code(reply)
            self.ctx.step("run_code", {"output": outcome.text}, self.ctx.reward_for("tool_result", outcome.ok),
                          code=reply, reply=reply)
            if outcome.final is not None:
                return FrameworkOutcome(outcome.final)
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": outcome.text}]

    def close(self) -> None:
        pass


@hookimpl
def rlm_register_frameworks():
    return [FrameworkSpec("echo", "A test framework: replies are code or ANSWER: text",
                          "support.echo_framework:EchoFramework",
                          settings="support.echo_framework:EchoSettings", mode="agent")]
