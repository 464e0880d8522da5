"""The ``generic`` environment (RLM Code's GenericRLMEnvironment): JSON actions, with delegation.

Each reply is one JSON object: ``{"action": "run_python" | "final" | "delegate" | "delegate_batch", "code",
"rationale", "done", "final_response", "task", "tasks", "context"}``. ``run_python`` is rewarded with RLM Code's
formula (base 0.1, +0.7 success, −0.3 failure, −0.1 stderr); ``final`` earns 1.0; a delegation refused by the
cycle guard earns −0.25. The prompt shows the task, the last six memory notes and the last three steps.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ActionResult, RecursionRefused
from rlm_host.sdk.environments import (
    EnvironmentContext, StepHistory, answer_text, execute_code, render_description, reply_action, synthesized_answer,
    truncate, with_instructions,
)
from rlm_host.sdk.models import Completion, Message, ReplyFormat
from rlm_host.sdk.sandbox import SandboxSession

SYSTEM_PROMPT = """\
You are an RLM planner.
Return ONLY valid JSON with keys: action, code, rationale, done, final_response.
Valid action values: "run_python", "final", "delegate", "delegate_batch".
- run_python: "code" is Python run in a persistent REPL (variables persist; `context` holds the task's context \
if there is one); you see what it prints.
- final: "final_response" is your answer; set "done": true.
- delegate: "task" is a sub-task solved by a recursive run; optional "context" is passed to it.
- delegate_batch: "tasks" is a list of sub-tasks solved by recursive runs.
No markdown. JSON only."""

#: The action object as a JSON schema, in the strict form OpenAI's structured outputs require (every key present,
#: null where unused); llama.cpp turns it into a grammar. Replies that break it are still read by parse_action.
_NULLABLE_TEXT = {"type": ["string", "null"]}
_PROPERTIES: dict[str, Any] = {
    "action": {"type": "string", "enum": ["run_python", "final", "delegate", "delegate_batch"]},
    "code": _NULLABLE_TEXT, "rationale": _NULLABLE_TEXT, "done": {"type": "boolean"},
    "final_response": _NULLABLE_TEXT, "task": _NULLABLE_TEXT,
    "tasks": {"type": ["array", "null"], "items": {"type": "string"}}, "context": _NULLABLE_TEXT,
}
ACTION_SCHEMA: dict[str, Any] = {"type": "object", "properties": _PROPERTIES, "required": list(_PROPERTIES),
                                 "additionalProperties": False}
REPLY_FORMAT = ReplyFormat("generic_action", json_schema=ACTION_SCHEMA)


class GenericSettings(BaseModel):
    """``[environment.generic]``."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(4000, ge=200, description="output shown per step")
    delegate_concurrency: int = Field(4, ge=1, le=16, description="children of delegate_batch run at once")


class GenericEnvironment:
    name = "generic"
    reply_format = REPLY_FORMAT  # one action object: enforced where the connector can

    def __init__(self, settings: Optional[GenericSettings], ctx: EnvironmentContext) -> None:
        self.ctx = ctx
        self.settings = settings or GenericSettings()
        self.session: Optional[SandboxSession] = None
        self.history = StepHistory()
        self._step: Optional[int] = None  # the step being executed: its code events name it

    def start(self) -> None:
        self.session = self.ctx.open_sandbox()
        self.session.start()
        if self.ctx.context is not None:
            self.session.set_variable("context", self.ctx.context)

    def close(self) -> None:
        if self.session is not None:
            self.session.shutdown()
            self.session = None

    def messages(self, step: int) -> list[Message]:
        lines = [f"Task: {self.ctx.task}", f"Step: {step} of {self.ctx.max_steps}"]
        if self.ctx.context is not None:
            lines.append("Context (variable `context` in the REPL):\n"
                         + render_description(self.ctx.context_meta, 200))
        lines += self.history.prompt_sections()
        system = with_instructions(SYSTEM_PROMPT, self.ctx.instructions)
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(lines)}]

    def execute(self, reply: Completion, step: int) -> ActionResult:
        self._step = step
        return self.history.record(self._act(reply))

    def _act(self, reply: Completion) -> ActionResult:
        action, problem = reply_action(reply)
        if action is None:
            return ActionResult(action="malformed_reply", observation={"error": problem},
                                reward=-self.ctx.rewards.no_action_penalty)
        name = str(action.get("action", "")).strip()
        if name == "final" or action.get("done") is True and name not in ("run_python", "delegate", "delegate_batch"):
            answer = action.get("final_response")
            answer = answer if isinstance(answer, str) else json.dumps(answer, default=str)
            return ActionResult(action="final", observation={"rationale": action.get("rationale")},
                                reward=self.ctx.rewards.final_reward, done=True, final_response=answer)
        if name == "run_python":
            return self._run_python(str(action.get("code") or ""))
        if name in ("delegate", "delegate_batch"):
            tasks = [action.get("task")] if name == "delegate" else action.get("tasks")
            return self._delegate(tasks if isinstance(tasks, list) else [], action.get("context"), name)
        return ActionResult(action="invalid_action", observation={"error": f"unknown action {name!r}"},
                            reward=-self.ctx.rewards.no_action_penalty)

    def synthesize(self) -> Optional[str]:
        ask = "Steps are used up. Give your best final answer now as plain text."
        messages = self.messages(self.ctx.max_steps) + [{"role": "user", "content": ask}]
        return synthesized_answer(self.ctx.root.complete(messages, purpose="synthesis").text, self.session)

    # ------------------------------------------------------------------ actions

    def _run_python(self, code: str) -> ActionResult:
        assert self.session is not None
        if not code.strip():
            return ActionResult(action="run_python", observation={"error": "no code given"},
                                reward=self.ctx.rewards.code_step(ok=False, stderr=False))
        result = execute_code(self.ctx.scope, self.session, code, self.ctx.step_timeout(), step=self._step)
        if result.final is not None:
            return ActionResult(action="final", observation={"stdout": truncate(result.stdout, 2000)}, code=code,
                                reward=self.ctx.rewards.final_reward, done=True,
                                final_response=answer_text(result.final))
        limit = self.settings.max_output_chars
        observation = {"success": result.ok, "stdout": truncate(result.stdout, limit)}
        observation.update({key: truncate(value, limit // 2) for key in ("stderr", "error")
                            if (value := getattr(result, key))})
        reward = self.ctx.rewards.code_step(ok=result.ok, stderr=bool(result.stderr))
        note = f"run_python {'ok' if result.ok else 'failed'}: {(result.error or result.stdout).strip()[:120]}"
        return ActionResult(action="run_python", observation=observation, reward=reward, code=code, memory_note=note)

    def _delegate(self, tasks: list[Any], context: Any, action: str) -> ActionResult:
        tasks = [str(t) for t in tasks if isinstance(t, str) and t.strip()]
        if not tasks:
            return ActionResult(action=action, observation={"error": "no task given"},
                                reward=self.ctx.rewards.code_step(ok=False, stderr=False))
        with ThreadPoolExecutor(max_workers=min(self.settings.delegate_concurrency, len(tasks))) as pool:
            outcomes = list(pool.map(lambda task: self._one_child(task, context), tasks))
        observation = {"children": [record for record, _ in outcomes],
                       "success": all(record.get("completed") for record, _ in outcomes)}
        note = f"{action}: " + "; ".join(f"{r['task'][:40]} → {str(r.get('answer'))[:60]}" for r, _ in outcomes)
        return ActionResult(action=action, observation=observation, reward=sum(w for _, w in outcomes) / len(outcomes),
                            memory_note=note)

    def _one_child(self, task: str, context: Any) -> tuple[dict[str, Any], float]:
        try:
            child = self.ctx.spawn_child(task, context)
        except RecursionRefused as refused:
            status = "blocked_by_cycle_guard" if refused.reason == "cycle" else "blocked_by_max_depth"
            rewards = self.ctx.rewards
            penalty = rewards.cycle_guard_penalty if refused.reason == "cycle" else -rewards.run_python_failure_penalty
            return {"task": task, "status": status, "error": str(refused)}, penalty
        record = {"task": task, "run_id": child.run_id, "completed": child.completed, "answer": child.final_response,
                  "termination_reason": child.termination_reason}
        return record, self.ctx.rewards.code_step(ok=child.completed, stderr=False)
