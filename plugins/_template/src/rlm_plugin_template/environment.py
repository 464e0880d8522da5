"""The ``plugin-template-lines`` environment: the rulebook of a run in two kinds of reply line.

The model sees the task and a description of the context (never the context itself: it is the variable
``context`` in the sandbox) and answers each step with

- ``RUN: <python>`` (one line), or a ```python block: the code runs in the run's sandbox session, its output is
  the next prompt's observation;
- ``ANSWER: <text>``: the final answer, which ends the run.

Anything else is a step without an action (a small penalty), never an exception. An environment factory is
called once per run as ``LinesEnvironment(settings, ctx)`` with the run's ``EnvironmentContext``: its models
(``ctx.root``, ``ctx.sub``), its sandbox (``ctx.open_sandbox()``), its budget, rewards and limits.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ActionResult
from rlm_host.sdk.environments import EnvironmentContext, truncate, with_instructions
from rlm_host.sdk.models import Completion, Message, ReplyFormat

SYSTEM = """\
You answer a task about a context kept in a Python REPL as the variable `context`; you never see it whole.
Reply with exactly one of:
RUN: <one line of Python>   (or a ```python block): runs in the REPL; you see what it prints
ANSWER: <your answer>       ends the task
Variables persist between steps."""

#: What the model may write, as a grammar, for connectors that enforce one (llama.cpp); the others ignore it.
REPLY_FORMAT = ReplyFormat("plugin_template_lines", gbnf='root ::= ("RUN: " | "ANSWER: ") [^\\n]+\n')

_FENCE = re.compile(r"```(?:python)?\s*\n(.*?)```", re.S)


class LinesSettings(BaseModel):
    """``[environment.plugin-template-lines]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(2000, ge=200, description="output shown to the model per step")


class LinesEnvironment:
    name = "plugin-template-lines"
    reply_format = REPLY_FORMAT

    def __init__(self, settings: Optional[LinesSettings], ctx: EnvironmentContext) -> None:
        self.ctx = ctx
        self.settings = settings or LinesSettings()
        self.session: Any = None
        self.last: str = ""

    def start(self) -> None:
        self.session = self.ctx.open_sandbox()
        self.session.start()
        if self.ctx.context is not None:
            self.session.set_variable("context", self.ctx.context)

    def messages(self, step: int) -> list[Message]:
        meta = self.ctx.context_meta  # the context's description, computed once per run by the host
        described = f"a {meta.get('type')} of {meta.get('total_chars', 0):,} characters" if meta else "none"
        user = f"Task: {self.ctx.task}\nContext: {described}\nStep {step} of {self.ctx.max_steps}."
        if self.last:
            user += f"\nLast output:\n{self.last}"
        # the user's [run] instructions (--instructions) go after the environment's own prompt, never instead of it
        system = with_instructions(SYSTEM, self.ctx.instructions)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def execute(self, reply: Completion, step: int) -> ActionResult:
        text = (reply.text or "").strip()
        fenced = _FENCE.search(text)
        if text.startswith("ANSWER:"):
            return ActionResult(action="final", done=True, final_response=text.removeprefix("ANSWER:").strip(),
                                reward=self.ctx.rewards.final_reward)
        if text.startswith("RUN:") or fenced:
            return self._run(fenced.group(1) if fenced else text.removeprefix("RUN:").strip())
        self.last = "(no RUN: or ANSWER: line in your reply)"
        return ActionResult(action="no_action", observation={"error": reply.raw.get("malformed") or self.last},
                            reward=-self.ctx.rewards.no_action_penalty)

    def _run(self, code: str) -> ActionResult:
        result = self.session.execute(code, timeout=self.ctx.step_timeout())
        output = result.stdout + (f"\nerror: {result.error}" if result.error else "")
        self.last = truncate(output.strip() or "(no output)", self.settings.max_output_chars)
        block = {"code": code, "stdout": truncate(result.stdout, self.settings.max_output_chars), "error": result.error}
        return ActionResult(action="run_code", code=code, observation={"success": result.ok, "blocks": [block]},
                            reward=self.ctx.rewards.code_step(ok=result.ok, stderr=bool(result.stderr)))

    def synthesize(self) -> Optional[str]:
        """Steps ran out: one more root call for the best answer so far."""
        ask = {"role": "user", "content": "No steps are left. Give your best answer now, as plain text."}
        answer = self.ctx.root.complete(self.messages(self.ctx.max_steps) + [ask], purpose="synthesis").text
        return answer.strip() if answer and answer.strip() else None

    def close(self) -> None:
        if self.session is not None:
            self.session.shutdown()
            self.session = None
