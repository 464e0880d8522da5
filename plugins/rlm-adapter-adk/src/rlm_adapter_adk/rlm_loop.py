"""The ``adk-rlm`` framework (mode ``native_rlm``): the RLM loop of the seeds' ADK design, built of ADK agents.

::

    rlm_session (RlmSessionAgent)                 the loop, then (``format_result``) the result formatter
      ├─ rlm_root (RlmLoopAgent, a BaseAgent)       up to max_iterations = the run's max_steps; callbacks open and
      │  │                                          close the session metrics (``rlm_callbacks``)
      │  ├─ code_generator (LlmAgent, no tools)     our root model (RlmTextLlm): the legacy RLM system prompt and
      │  │                                          the iteration history from session state → a ```repl reply
      │  │                                          (output_key "generated_code"; after_model: custom_metadata)
      │  ├─ repl_executor (ReplExecutor)            runs the reply's ```repl blocks in OUR sandbox
      │  │                                          (ctx.tools.run_code; ``rlm_query`` there starts a child run
      │  │                                          one level deeper), appends the iteration to the history
      │  └─ completion_checker (CompletionChecker)  FINAL / FINAL_VAR in the code or in the text → escalate
      └─ result_formatter (LlmAgent, optional)      rewrites the answer for presentation (one synthesis call)

Session state keys (``STATE_*`` below): ``generated_code`` (the last reply), ``rlm_iterations`` (the history: one
``{"iteration", "reply", "blocks": [{"code", "output", "ok"}], "note"}`` per iteration), ``rlm_execution_result``
(the last iteration's record), ``rlm_final_answer`` and ``rlm_termination_reason``.

Each iteration is recorded with ``ctx.step`` as it runs: ``run_code`` (observation: the blocks and their output;
reward: ``[rewards]`` code_step), ``no_code`` (a reply with neither code nor FINAL: -no_action_penalty), and
``final`` (final_reward). ``StepLimitReached`` (from the root model) and the budget's exceptions (from
``ctx.step``) propagate out of ADK untouched.

The user's own functions (``--tool``, ``RLM(tools=[fn])``) are defined in the run's REPL, as in a native run, and
listed in the system prompt; with an output type (``[run] output_type``, ``--output-schema``) the prompt states its
JSON Schema, a FINAL that does not match is a ``final_rejected`` step whose problems go back to the model (the loop
goes on), and the result formatter is left out (it would rewrite the JSON as prose).

Why custom ``BaseAgent`` subclasses and not ``LoopAgent`` / ``SequentialAgent`` (deprecated in ADK 2.x in favour
of ``google.adk.workflow``): the loop is three lines of ``_run_async_impl``, stays the seeds' agent tree (sub
agents, escalation, state deltas), emits no deprecation warning, and does not depend on the workflow API, which
is new and still moving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from typing import Any, AsyncGenerator, Optional

from google.adk.agents import BaseAgent, LlmAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event, EventActions
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import ConfigDict

from rlm_adapter_adk.framework import _QUIET_LOGS, _QuietAdkLogs
from rlm_adapter_adk import rlm_callbacks as callbacks
from rlm_adapter_adk.model import REPLY_KEY, RlmLlm, _FINISH, to_chat
from rlm_adapter_adk.rlm_settings import AdkRlmSettings
from rlm_host.sdk.environments import tools_prompt
from rlm_host.sdk.frameworks import (
    ANSWER_REJECTED, REPL_REPLY_FORMAT, FrameworkContext, FrameworkOutcome, OutputInvalid, describe_context_briefly,
    run_coroutine, truncate, typed_answer,
)

APP = "rlm"
STATE_CODE = "generated_code"
STATE_ITERATIONS = "rlm_iterations"
STATE_RESULT = "rlm_execution_result"
STATE_FINAL = "rlm_final_answer"
STATE_REASON = "rlm_termination_reason"
STATE_FORMATTED = "rlm_formatted_answer"

FORMAT_PROMPT = ("Rewrite the answer below to the query as a clear, complete reply for the person who asked. Keep "
                 "every fact, number and name exactly; add nothing.\n\nQuery: {task}\n\nAnswer: {answer}")

#: The legacy RLM system prompt (the RLM paper's REPL contract), with the run's limits.
SYSTEM_PROMPT = """\
You are tasked with answering a query with associated context. You can access, transform, and analyze this \
context interactively in a REPL environment that can recursively query sub-LLMs, which you are strongly \
encouraged to use as much as possible. You will be queried iteratively until you provide a final answer.

The REPL environment is initialized with:
1. A `context` variable that contains extremely important information about your query. You should check the \
content of the `context` variable to understand what you are working with. Here it is {description}.
2. A `llm_query(prompt)` function that allows you to query an LLM inside your REPL environment, and \
`llm_query_batched(prompts)` that asks several prompts at once (answers in the same order).
3. The ability to use `print()` statements to view the output of your REPL code and continue your reasoning.

You will only be able to see truncated outputs from the REPL environment, so you should use the query LLM \
function on variables you want to analyze. Variables persist between iterations.

When you want to execute Python code in the REPL environment, wrap it in triple backticks with the 'repl' \
language identifier. For example:
```repl
chunk = context[:10000]
answer = llm_query(f"What is the magic number in the context? Here is the chunk: {{chunk}}")
print(answer)
```

IMPORTANT: When you are done, provide a final answer with one of:
1. FINAL(your final answer here) to provide the answer directly
2. FINAL_VAR(variable_name) to return a variable you have created in the REPL as your final output
either at the start of a line of your reply, or called inside a ```repl block. Do not give the final answer \
before examining the context with code.

You have {max_steps} iterations in all."""

FIRST_MESSAGE = "Query: {task}\n\nThink step by step about the context first, then write ```repl code."
NO_CODE = ("Your reply had no ```repl code block and no final answer. Write code in a ```repl block to examine "
           "`context`, or finish with FINAL(answer) / FINAL_VAR(variable_name) at the start of a line.")
_BLOCK = re.compile(r"```repl[ \t]*\n(.*?)\n?```", re.DOTALL)
_FINAL_LINE = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\((.*)\)[ \t]*$", re.MULTILINE)
_FINAL_LINES = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\((.*)\)[ \t]*$", re.MULTILINE | re.DOTALL)  # over lines


def create(settings: Optional[AdkRlmSettings], ctx: FrameworkContext) -> "AdkRlmFramework":
    """The framework factory (``factory(settings, FrameworkContext)``)."""
    return AdkRlmFramework(settings, ctx)


# ---------------------------------------------------------------------------------------------- parsing


def code_blocks(text: str) -> list[str]:
    """The ```repl blocks of a reply, in order."""
    return [block for block in _BLOCK.findall(text or "") if block.strip()]


def final_in_text(text: str) -> Optional[tuple[str, str]]:
    """``("FINAL" | "FINAL_VAR", argument)`` written at the start of a line outside any code block, or None."""
    outside = _BLOCK.sub("", text or "")
    outside = re.sub(r"```.*?```", "", outside, flags=re.DOTALL)
    match = _FINAL_LINE.search(outside) or _FINAL_LINES.search(outside)
    if match is None:
        return None
    kind, argument = match.group(1), match.group(2).strip()
    if len(argument) >= 2 and argument[0] == argument[-1] and argument[0] in "\"'":
        argument = argument[1:-1]
    return kind, argument


# ---------------------------------------------------------------------------------------------- the model


class RlmTextLlm(RlmLlm):
    """``RlmLlm`` without the tool protocol: the request as chat messages, the reply's text as it is; the root's
    turns held to the REPL grammar (```repl blocks, a FINAL line) where the provider enforces one."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    # RlmLlm's, said again: pydantic's mypy plugin gives a subclass without one an __init__ of its fields
    def __init__(self, role: Any, *, purpose: str = "turn", **data: Any) -> None:
        super().__init__(role, purpose=purpose, **data)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        chat = await asyncio.to_thread(self._chat_compactor.fit, to_chat(llm_request))  # kept inside the window
        completion = await asyncio.to_thread(self._role.complete, chat, purpose=self._purpose,
                                             reply_format=REPL_REPLY_FORMAT)
        inp, out = completion.input_tokens or 0, completion.output_tokens or 0
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(text=completion.text or "")]),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=inp, candidates_token_count=out, total_token_count=inp + out),
            model_version=completion.model or self.model or None,
            finish_reason=_FINISH.get(str(completion.finish_reason or "").lower(), types.FinishReason.STOP),
            custom_metadata={REPLY_KEY: completion.text or ""},
        )


# ---------------------------------------------------------------------------------------------- the agents


class ReplExecutor(BaseAgent):
    """Runs the ```repl blocks of ``state["generated_code"]`` in the run's sandbox and records the iteration."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    framework: Any = None

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        reply = str(state.get(STATE_CODE) or "")
        budget = self.framework.ctx.budget
        calls_before, started = budget.llm_calls, time.monotonic()
        record = await self.framework.iteration(reply, len(state.get(STATE_ITERATIONS) or []) + 1)
        measured = callbacks.record_execution(state, record, time.monotonic() - started,
                                              budget.llm_calls - calls_before)
        delta: dict[str, Any] = {STATE_ITERATIONS: [*(state.get(STATE_ITERATIONS) or []), record],
                                 STATE_RESULT: record, callbacks.STATE_METRICS: measured["metrics"]}
        if record.get("final") is not None:
            delta[STATE_FINAL] = record["final"]
        yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch,
                    custom_metadata={"rlm_execution": measured["metadata"]},
                    actions=EventActions(state_delta=delta))


class CompletionChecker(BaseAgent):
    """Ends the loop (escalate) once the iteration found an answer (FINAL / FINAL_VAR)."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        answer = ctx.session.state.get(STATE_FINAL)
        if answer is None:
            yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch)
            return
        yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch,
                    content=types.Content(role="model", parts=[types.Part(text=str(answer))]),
                    actions=EventActions(escalate=True, state_delta={STATE_REASON: "final"}))


class RlmSessionAgent(BaseAgent):
    """The loop, then the result formatter when there is one and the loop found an answer."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        loop, *formatter = self.sub_agents
        events = loop.run_async(ctx)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event
        if formatter and ctx.session.state.get(STATE_FINAL) is not None:
            events = formatter[0].run_async(ctx)
            async with contextlib.aclosing(events):
                async for event in events:
                    yield event


class RlmLoopAgent(BaseAgent):
    """The loop: its sub-agents in order, ``max_iterations`` times, until one escalates."""

    max_iterations: int = 10

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for _ in range(self.max_iterations):
            for agent in self.sub_agents:
                events = agent.run_async(ctx)
                async with contextlib.aclosing(events):
                    async for event in events:
                        yield event
                        if event.actions and event.actions.escalate:
                            return
        yield Event(author=self.name, invocation_id=ctx.invocation_id, branch=ctx.branch,
                    actions=EventActions(state_delta={STATE_REASON: "max_iterations"}))


# ---------------------------------------------------------------------------------------------- the framework


class AdkRlmFramework:
    name = "adk-rlm"

    def __init__(self, settings: Optional[AdkRlmSettings], ctx: FrameworkContext) -> None:
        self.settings = settings or AdkRlmSettings()
        self.ctx = ctx
        #: what the system prompt says ``context`` is (adk-rlm-agent updates it when its root loads a new one)
        self.context_meta = ctx.context_meta
        self._events = 0
        self._iterations = 0

    def run(self) -> FrameworkOutcome:
        return run_coroutine(self._run)  # a loop of its own, also when called from async code

    def close(self) -> None:
        pass  # the sandbox session is the runner's

    # -- the agent tree ---------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        description = describe_context_briefly(self.context_meta, self.settings.preview_chars)
        text = SYSTEM_PROMPT.format(description=description, max_steps=self.ctx.max_steps)
        output = self.ctx.output
        extra = [part for part in (tools_prompt(self.ctx.tools.user_tools.tools), output and output.prompt(),
                                   self.settings.instructions.strip()) if part]
        return "\n\n".join([text, *extra])

    def agent(self, name: str = "rlm_session", description: str = "The RLM loop and its answer") -> RlmSessionAgent:
        """The agent tree (``name``: its root's; adk-rlm-agent offers it as ``rlm_workflow``)."""
        generator = LlmAgent(
            name="code_generator",
            model=RlmTextLlm(self.ctx.root),
            instruction=lambda _context: self.system_prompt(),  # a callable: no {placeholder} filling
            description="Writes the next ```repl code of the RLM loop",
            include_contents="none",  # the history comes from the session state (before_model_callback)
            before_model_callback=[self._inject_history, callbacks.before_model],
            after_model_callback=callbacks.after_model,
            on_model_error_callback=callbacks.on_model_error,
            output_key=STATE_CODE,
        )
        loop = RlmLoopAgent(
            name="rlm_root",
            description="The RLM loop: generate code, run it in the sandbox, check for FINAL",
            max_iterations=max(1, self.ctx.max_steps),
            sub_agents=[generator, ReplExecutor(name="repl_executor", framework=self),
                        CompletionChecker(name="completion_checker")],
            before_agent_callback=callbacks.before_loop,
            after_agent_callback=callbacks.after_loop,
        )
        agents: list[BaseAgent] = [loop]
        if self.settings.format_result and self.ctx.output is None:  # a typed answer stays the JSON it is
            agents.append(LlmAgent(
                name="result_formatter", model=RlmTextLlm(self.ctx.root, purpose="synthesis"),
                instruction=lambda context: FORMAT_PROMPT.format(task=self.ctx.task,
                                                                 answer=context.state.get(STATE_FINAL)),
                description="Formats the final answer for presentation", include_contents="none",
                output_key=STATE_FORMATTED,
            ))
        return RlmSessionAgent(name=name, description=description, sub_agents=agents)

    def _inject_history(self, callback_context: Any, llm_request: LlmRequest) -> None:
        """The code generator's contents: the query, then each iteration (its reply, the REPL's output)."""
        contents = [types.Content(role="user", parts=[types.Part(text=FIRST_MESSAGE.format(task=self.ctx.task))])]
        for record in callback_context.state.get(STATE_ITERATIONS) or []:
            contents.append(types.Content(role="model", parts=[types.Part(text=record["reply"] or "(empty)")]))
            contents.append(types.Content(role="user", parts=[types.Part(text=self.feedback(record))]))
        llm_request.contents = contents
        return None

    def feedback(self, record: dict[str, Any]) -> str:
        if record.get("note"):
            return record["note"]
        return "\n\n".join(f"Code executed:\n```python\n{b['code']}\n```\n\nREPL output:\n{b['output']}"
                           for b in record["blocks"])

    # -- one iteration (called by ReplExecutor) -------------------------------------------------------------
    async def iteration(self, reply: str, number: int) -> dict[str, Any]:
        self._iterations = number
        blocks: list[dict[str, Any]] = []
        final: Optional[str] = None
        rejected: Optional[str] = None  # a FINAL in the code that does not match the run's output type
        stderr = False
        for code in code_blocks(reply):
            outcome = await asyncio.to_thread(self.ctx.tools.run_code, code)
            stderr = stderr or bool(outcome.result.stderr.strip())
            blocks.append({"code": code, "ok": outcome.ok,
                           "output": truncate(outcome.text, self.settings.max_output_chars)})
            if outcome.rejected is not None:  # the block's output says what was wrong; the loop goes on
                rejected = outcome.rejected
                break
            if outcome.final is not None:
                final = outcome.final
                break
        record: dict[str, Any] = {"iteration": number, "reply": reply, "blocks": blocks, "note": None}
        ran_code = "\n\n".join(b["code"] for b in blocks) or None
        if final is not None:  # FINAL / FINAL_VAR called in the code
            record["final"] = final
            self._step("final", {"answer": final, "via": "code", "output": "\n".join(b["output"] for b in blocks),
                                 "blocks": blocks}, self.ctx.reward_for("final"),
                       code=ran_code, reply=reply)
            return record
        if rejected is not None:
            output = "\n".join(b["output"] for b in blocks)
            self._step("final_rejected", {"iteration": number, "output": output, "blocks": blocks,
                                          "final_rejected": rejected}, -self.ctx.rewards.no_action_penalty,
                       code=ran_code, reply=reply)
            return record
        if blocks:
            ok = all(b["ok"] for b in blocks)
            output = "\n".join(b["output"] for b in blocks)  # what `rlm runs show` prints
            self._step("run_code", {"iteration": number, "ok": ok, "output": output, "blocks": blocks},
                       self.ctx.rewards.code_step(ok=ok, stderr=stderr), code=ran_code, reply=reply)
            reply_left: Optional[str] = None
        else:
            reply_left = reply
        found = final_in_text(reply)
        if found is not None:
            kind, argument = found
            if kind == "FINAL_VAR":
                outcome = await asyncio.to_thread(self.ctx.tools.run_code, f"FINAL_VAR({argument!r})")
                if outcome.rejected is not None:
                    return self._rejected(record, outcome.rejected, argument, reply_left)
                if outcome.final is None:
                    record["note"] = (f"FINAL_VAR({argument}) failed: {truncate(outcome.text, 500)}\nCreate the "
                                      "variable in a ```repl block first, or use FINAL(answer).")
                    self._step("no_code", {"error": record["note"]}, -self.ctx.rewards.no_action_penalty,
                               reply=reply_left)
                    return record
                argument = outcome.final
            else:
                try:
                    argument = typed_answer(self.ctx.output, argument)
                except OutputInvalid as invalid:
                    return self._rejected(record, str(invalid), argument, reply_left)
            record["final"] = argument
            self._step("final", {"answer": argument, "via": kind}, self.ctx.reward_for("final"), reply=reply_left)
            return record
        if not blocks:
            record["note"] = NO_CODE
            self._step("no_code", {"error": NO_CODE}, -self.ctx.rewards.no_action_penalty, reply=reply)
        return record

    def _rejected(self, record: dict[str, Any], problems: str, answer: str, reply: Optional[str]) -> dict[str, Any]:
        """A FINAL line whose answer does not match the run's output type: the problems go back to the model."""
        ran = self.feedback(record) if record["blocks"] else ""  # what the reply's code printed, then the problems
        record["note"] = "\n\n".join(part for part in (ran, ANSWER_REJECTED.format(problems=problems)) if part)
        self._step("final_rejected", {"answer": answer, "final_rejected": problems},
                   -self.ctx.rewards.no_action_penalty, reply=reply)
        return record

    def _step(self, action: str, observation: dict[str, Any], reward: float, *, code: Optional[str] = None,
              reply: Optional[str] = None) -> None:
        self.ctx.step(action, observation, reward=reward, code=code, reply=reply)

    # -- the run ------------------------------------------------------------------------------------------
    async def _run(self) -> FrameworkOutcome:
        runner = InMemoryRunner(agent=self.agent(), app_name=APP)
        quiet = _QuietAdkLogs()
        for name in _QUIET_LOGS:
            logging.getLogger(name).addFilter(quiet)
        try:
            session = await runner.session_service.create_session(app_name=APP, user_id="rlm")
            content = types.Content(role="user", parts=[types.Part(text=self.ctx.task)])
            events = runner.run_async(user_id="rlm", session_id=session.id, new_message=content)
            async with contextlib.aclosing(events):
                async for _event in events:
                    self._events += 1
            finished = await runner.session_service.get_session(app_name=APP, user_id="rlm", session_id=session.id)
            state = finished.state if finished is not None else {}  # a session gone: no answer, not a crash
            answer = state.get(STATE_FINAL)
            if answer is not None and state.get(STATE_FORMATTED):
                answer = str(state[STATE_FORMATTED]).strip() or answer
            metadata = {"adk_events": self._events, "iterations": self._iterations,
                        "adk_termination": state.get(STATE_REASON),
                        "session_metrics": state.get(callbacks.STATE_METRICS)}
            if answer is not None:
                return FrameworkOutcome(str(answer), True, metadata)
            return FrameworkOutcome(None, False, metadata, termination_reason="max_steps")
        finally:
            for name in _QUIET_LOGS:
                logging.getLogger(name).removeFilter(quiet)
            await runner.close()
