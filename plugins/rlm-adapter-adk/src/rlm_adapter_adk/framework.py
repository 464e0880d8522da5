"""The ``google-adk`` framework: a Google ADK ``LlmAgent`` runs the task, with rlm's models and sandbox.

- the agent's model is :class:`~rlm_adapter_adk.model.RlmLlm` over ``ctx.root`` (text-only, tool calls through
  the text protocol);
- its tools are ``run_code(code)`` (the run's sandbox session, ``context`` loaded there, ``llm_query`` inside the
  code) and ``llm_query(prompt)`` (the run's sub-model), and the user's own functions (``--tool``,
  ``RLM(tools=[fn])``: ``ctx.tools.user_tools``) as function tools of their own (name, parameters and
  description from the function), each call through the run's approvals, timeout and ``tool_call`` event; a tool's
  exception comes back to the model as a failed result (``{"ok": False, "output": "error: …"}``), never the end of
  the run;
- with an output type (``[run] output_type``, ``--output-schema``) the instruction states its JSON Schema and the
  answer is checked against it: one that does not match is recorded as a ``final_rejected`` step and sent back as
  the next invocation's message, within ``max_steps`` (ADK's ``output_schema`` needs a model with native structured
  output; this one speaks the text protocol);
- ADK's ``InMemoryRunner`` runs it; each event of its async stream is recorded with ``ctx.step`` as it arrives:

  ============  ===========================================================  ===========================
  step action   when                                                         reward (its settings)
  ============  ===========================================================  ===========================
  tool_call     a model reply calls a tool (observation: tool, args)         reward_tool_call
  model_text    the prose of a reply next to a tool call, or a malformed     reward_model_text
                or empty reply (sent back to the model)
  tool_result   a tool returned                                              reward_tool_result
  tool_error    a tool ran and failed (code raised, a sub-call failed)       reward_tool_error
  retry         ADK rejected a call (unknown tool, missing arguments), or    reward_retry
                a malformed or empty reply is sent back
  final         the answer: a text reply ADK took as final, or FINAL()       final_reward
                called in run_code
  ============  ===========================================================  ===========================

An answer of the wrong type is a ``final_rejected`` step (reward_retry).

``StepLimitReached`` (from the root model, once ``max_steps`` turns are used) propagates out of ADK untouched,
and the budget's exceptions come from ``ctx.step`` in the event loop, outside ADK; so the runner records
``max_steps`` or the budget's reason. ADK has no retry of a final answer, so a malformed or empty reply ends
ADK's invocation and the framework starts the next one in the same session with the note of what was wrong
(``output_retries`` times in a run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Optional

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from rlm_adapter_adk.model import INVALID_KEY, RlmLlm, reply_of, result_status
from rlm_adapter_adk.settings import AdkSettings
from rlm_host import BudgetExceeded, RlmError
from rlm_host.sdk.frameworks import (
    ANSWER_REJECTED, TOOL_DESCRIPTIONS, FrameworkContext, FrameworkOutcome, OutputInvalid, agent_instructions,
    check_tool_names, run_coroutine, tool_error_text, tool_result_text, truncate, typed_answer,
)

APP = "rlm"
#: ADK's loggers that report, with a traceback, the exceptions a run ends with on purpose (StepLimitReached, the
#: budget's, a model's error: the runner reports them), and a warning for each call of an unknown tool (the run
#: records it as a retry step). While a run lasts, those records are dropped; any other stays.
_QUIET_LOGS = ("google_adk.google.adk.runners", "google_adk.google.adk.workflow._node_runner",
               "google_adk.google.adk.flows.llm_flows.tools._caller")


def create(settings: Optional[AdkSettings], ctx: FrameworkContext) -> "AdkFramework":
    """The framework factory (``factory(settings, FrameworkContext)``)."""
    return AdkFramework(settings, ctx)


class AdkFramework:
    name = "google-adk"
    #: the framework's own tool names, which the user's tools may not take
    own_tools: tuple[str, ...] = ("run_code", "llm_query")

    def __init__(self, settings: Optional[AdkSettings], ctx: FrameworkContext) -> None:
        self.settings = settings or AdkSettings()
        self.ctx = ctx
        self._events = 0
        self._model_calls = 0
        self._rejected: Optional[str] = None  # the problems of an answer of the wrong type, to send back
        check_tool_names(ctx.tools.user_tools, self.own_tools, self.name)  # before the run: exit 2

    # ------------------------------------------------------------------ the run

    def run(self) -> FrameworkOutcome:
        return run_coroutine(self._run)  # a loop of its own, also when called from async code

    def close(self) -> None:
        pass  # the sandbox session is the runner's (closed with the run); the in-memory session goes with the loop

    def agent(self) -> LlmAgent:
        """The agent: our root model, the sandbox's tools, the RLM instructions."""
        instruction = agent_instructions(self.ctx, preview_chars=self.settings.preview_chars,
                                         user_instructions=self.settings.instructions)
        return LlmAgent(
            name="rlm",
            model=RlmLlm(self.ctx.root),
            # a callable: ADK fills `{name}` placeholders of a string instruction from the session state, and the
            # context's preview or the user's instructions may hold braces
            instruction=lambda _context: instruction,
            description="Answers a task about a large context through a Python REPL",
            tools=[FunctionTool(tool) for tool in self.tools()],
        )

    async def _run(self) -> FrameworkOutcome:
        quiet = _QuietAdkLogs()
        for name in _QUIET_LOGS:
            logging.getLogger(name).addFilter(quiet)
        runner: Optional[InMemoryRunner] = None
        try:
            runner = InMemoryRunner(agent=self.agent(), app_name=APP)  # it may warn as it starts
            session = await runner.session_service.create_session(app_name=APP, user_id="rlm")
            message, retries = self.ctx.task, 0
            while True:
                answer, invalid = await self._invocation(runner, session.id, message)
                if self._rejected is not None:  # an answer of the wrong type: the model is told, the run goes on
                    message, self._rejected = ANSWER_REJECTED.format(problems=self._rejected), None
                    continue
                if invalid is None:
                    return FrameworkOutcome(answer, answer is not None, self._metadata())
                if retries >= self.settings.output_retries:
                    hint = f"raise [framework.{self.name}] output_retries, or look at the last replies"
                    raise RlmError(f"{self.name} stopped the run: the reply was not understood ({invalid}), "
                                   f"{retries} times sent back", hint=hint)
                retries += 1
                feedback = f"Your reply was not understood: {invalid}"
                self._step("retry", {"cause": "invalid_reply", "feedback": feedback}, "retry")
                message = feedback
        finally:
            for name in _QUIET_LOGS:
                logging.getLogger(name).removeFilter(quiet)
            if runner is not None:
                await runner.close()

    async def _invocation(self, runner: InMemoryRunner, session_id: str,
                          message: str) -> tuple[Optional[str], Optional[str]]:
        """One ADK invocation (a user message, then the agent's turns until it answers): (the answer, None), or
        (None, why the last reply was not understood)."""
        content = types.Content(role="user", parts=[types.Part(text=message)])
        events = runner.run_async(user_id="rlm", session_id=session_id, new_message=content)
        async with contextlib.aclosing(events):
            async for event in events:
                self._events += 1
                done = self._record(event)
                if done is not None:
                    if event.is_final_response():  # ADK's invocation ends: let it finish (after-agent callbacks)
                        async for _rest in events:
                            self._events += 1
                    return done  # (FINAL() in the code stops here: ADK would call the model again)
        return None, None

    def _metadata(self) -> dict[str, Any]:
        return {"adk_events": self._events, "adk_model_calls": self._model_calls}

    # ------------------------------------------------------------------ steps as events arrive

    def _step(self, action: str, observation: dict[str, Any], kind: str, *, ok: bool = True,
              code: Optional[str] = None, reply: Optional[str] = None) -> None:
        """Record one step now (``kind``: its event kind in the reward table); the budget's refusals propagate."""
        self.ctx.step(action, observation, self.ctx.reward_for(kind, ok), code=code, reply=reply)

    def _record(self, event: Any, agent: Optional[str] = None) -> Optional[tuple[Optional[str], Optional[str]]]:
        """Record one event's steps; (answer, invalid) when the invocation is over for us. ``agent``: the event is
        a helper agent's (its steps say so; its text is never the run's answer)."""
        if event.content is None or not event.content.parts:
            return None
        tag = {"agent": agent} if agent else {}
        reply = reply_of(event)
        if reply is not None or event.usage_metadata is not None:
            self._model_calls += 1
        calls = event.get_function_calls()
        responses = event.get_function_responses()
        text = "\n".join(p.text for p in event.content.parts if p.text and not p.thought and p.text.strip())
        if calls:
            if text:
                self._step("model_text", {"text": text, **tag}, "model_text", reply=reply)
                reply = None  # the reply is on the step of its first part
            for call in calls:
                args = dict(call.args or {})
                code = args.get("code") if isinstance(args.get("code"), str) else None
                self._step("tool_call", {"tool": call.name, "args": args, **tag}, "tool_call", code=code, reply=reply)
                reply = None
            return None
        if responses:
            final, via = None, None
            for response in responses:
                value = response.response or {}
                status, output = result_status(value)
                if status == "retry":  # ADK rejected the call before running it
                    self._step("retry", {"tool": response.name, "cause": "rejected_call",
                                         "feedback": truncate(output, 2000), **tag}, "retry")
                    continue
                observation: dict[str, Any] = {"tool": response.name, "ok": status == "ok",
                                               "output": truncate(output, 2000), **tag}
                if value.get("final") is not None:
                    observation["final"] = final = str(value["final"])
                    via = f"FINAL() in {response.name}"
                for key in ("final_rejected", "refused", "metadata"):  # what a callback or the tool adds
                    if value.get(key) is not None:
                        observation[key] = value[key]
                self._step("tool_result" if status == "ok" else "tool_error", observation, "tool_result",
                           ok=status == "ok")
            if final is not None:  # FINAL() in the code: the run ends here, whatever ADK would do next
                self._step("final", {"answer": final, "via": via}, "final")
                return final, None
            return None
        if agent:  # a helper's answer goes back to the agent that called it
            if text:
                self._step("model_text", {"text": text, **tag}, "model_text", reply=reply)
            return None
        invalid = (event.custom_metadata or {}).get(INVALID_KEY)
        if invalid:
            self._step("model_text", {"text": text}, "model_text", reply=reply)
            return None, str(invalid)
        if event.is_final_response():
            try:
                text = typed_answer(self.ctx.output, text)
            except OutputInvalid as invalid:
                self._rejected = str(invalid)
                self._step("final_rejected", {"answer": text, "final_rejected": self._rejected}, "retry", reply=reply)
                return None, None
            self._step("final", {"answer": text}, "final", reply=reply)
            return text, None
        if text:
            self._step("model_text", {"text": text}, "model_text", reply=reply)
        return None

    # ------------------------------------------------------------------ the tools

    def tools(self) -> list[Any]:
        """The tools as ADK wants them: functions whose name, signature and docstring declare them (the
        descriptions are the host's; the user's tools keep their own)."""

        async def run_code(code: str) -> dict[str, Any]:
            return await self._run_code(code)

        async def llm_query(prompt: str) -> dict[str, Any]:
            return await self._llm_query(prompt)

        for function in (run_code, llm_query):
            function.__doc__ = TOOL_DESCRIPTIONS[function.__name__]
        return [run_code, llm_query, *self._user_tools()]

    def _user_tools(self) -> list[Any]:
        """The user's own functions (``--tool``) as ADK function tools: their results and errors as tool results."""
        limit = self.settings.max_output_chars
        return self.ctx.tools.user_tools.functions(
            asynchronous=True,  # on a worker thread: ADK awaits a tool on its event loop
            result=lambda value: {"ok": True, "output": truncate(tool_result_text(value), limit)},
            error=lambda exc: {"ok": False, "output": f"error: {tool_error_text(exc)}"},
        )

    async def _run_code(self, code: str) -> dict[str, Any]:
        outcome = await asyncio.to_thread(self.ctx.tools.run_code, code)
        result: dict[str, Any] = {"ok": outcome.ok, "output": truncate(outcome.text, self.settings.max_output_chars)}
        if outcome.final is not None:
            result["final"] = outcome.final
        if outcome.rejected is not None:  # FINAL() with an answer of the wrong type: the output says so
            result["final_rejected"] = outcome.rejected
        return result

    async def _llm_query(self, prompt: str) -> dict[str, Any]:
        try:
            return {"ok": True, "output": await asyncio.to_thread(self.ctx.tools.llm_query, prompt)}
        except RuntimeError as exc:  # how a sub-call failure is reported (model error, max_llm_calls…)
            return {"ok": False, "output": f"error: {exc}"}


class _QuietAdkLogs(logging.Filter):
    """Drops ADK's reports of what the run records itself: the exceptions that end a run on purpose (rlm's own:
    the runner reports them) and unknown tools (a retry step)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            return not isinstance(error, (RlmError, BudgetExceeded))
        if record.levelno != logging.WARNING:
            return True
        message = record.getMessage()
        # an unknown tool (a retry step); and the advice to configure Gemini's context cache for agent transfer
        # (adk-rlm-agent's rlm_workflow), which rlm's models do not have
        return not (message.startswith("Tool '") or "can transfer between agents" in message)
