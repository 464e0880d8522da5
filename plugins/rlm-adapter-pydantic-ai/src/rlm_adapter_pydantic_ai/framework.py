"""The ``pydantic-ai`` framework: a Pydantic AI agent runs the task, with rlm's models and sandbox.

- the agent's model is :class:`~rlm_adapter_pydantic_ai.model.RlmModel` over ``ctx.root`` (text-only, tool calls
  through the text protocol);
- its tools are ``run_code(code)`` (the run's sandbox session, ``context`` loaded there, ``llm_query`` inside
  the code) and ``llm_query(prompt)`` (the run's sub-model), and the user's own functions (``--tool``,
  ``RLM(tools=[fn])``: ``ctx.tools.user_tools``) as function tools of their own, each call through the run's
  approvals, timeout and ``tool_call`` event; a tool's exception is a failed tool result the model sees
  (``ToolFailed``: no retry is used up);
- with an output type (``[run] output_type``, ``--output-schema``) the agent's ``output_type`` is that type (an
  object schema: the type given, or a ``StructuredDict`` of the JSON Schema), so the answer is an output-tool call
  pydantic-ai validates; every answer is also held to the run's type by an output validator, and one that does not
  match is sent back (``ModelRetry``, within ``output_retries``) and recorded as a ``final_rejected`` step;
- it runs with ``agent.iter()``; each event is recorded with ``ctx.step`` as it happens:

  ==============  =========================================================  ===========================
  step action     when                                                       reward (its settings)
  ==============  =========================================================  ===========================
  tool_call       a model reply calls a tool (observation: tool, args)       reward_tool_call
  model_text      the prose of a reply next to a tool call, or a rejected    reward_model_text
                  answer
  tool_result     a tool returned (run_code, llm_query: recorded by the      reward_tool_result
                  tool itself, as it returns; a user's tool: as its result
                  goes back to the model)
  tool_error      a tool ran and failed (code raised, a sub-call failed, a   reward_tool_error
                  user's tool raised)
  retry           pydantic-ai asks the model again: unknown tool, bad        reward_retry
                  arguments, an empty or malformed reply
  final_rejected  the answer does not match the run's output type: sent      reward_retry
                  back with the problems
  final           the answer: a text answer the agent accepted, or FINAL()   final_reward
                  called in run_code
  ==============  =========================================================  ===========================

``StepLimitReached`` (from the root model, once ``max_steps`` turns are used) and the budget's exceptions (from
``ctx.step``) propagate through pydantic-ai untouched (a tool never catches them, and pydantic-ai turns only
``ModelRetry`` / validation errors into retries), so the runner records ``max_steps`` or the budget's reason.
pydantic-ai's own request limit is off. pydantic-ai giving up (its retries used up) ends the run as an error.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Optional

from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.exceptions import AgentRunError, ToolFailed
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    TextPart,
)
from pydantic_ai.usage import UsageLimits

from rlm_adapter_pydantic_ai.model import REPLY_KEY, RlmModel, reject_invalid_reply
from rlm_adapter_pydantic_ai.settings import PydanticAISettings
from rlm_host import RlmError
from rlm_host.sdk.frameworks import (
    ANSWER_REJECTED, TOOL_DESCRIPTIONS, FrameworkContext, FrameworkOutcome, OutputInvalid, agent_instructions,
    check_tool_names, run_coroutine, tool_error_text, tool_result_text, truncate, typed_answer,
)

#: The framework's own tools, and pydantic-ai's output tool: no tool of the user's may take their names.
OWN_TOOLS = ("run_code", "llm_query", "final_result")


def create(settings: Optional[PydanticAISettings], ctx: FrameworkContext) -> "PydanticAIFramework":
    """The framework factory (``factory(settings, FrameworkContext)``)."""
    return PydanticAIFramework(settings, ctx)


class _Finished(Exception):
    """Raised by run_code when the code called FINAL(): the run ends with that answer (never a retry)."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer


class PydanticAIFramework:
    name = "pydantic-ai"

    def __init__(self, settings: Optional[PydanticAISettings], ctx: FrameworkContext) -> None:
        self.settings = settings or PydanticAISettings()
        self.ctx = ctx
        self._pending_text: Optional[tuple[str, Optional[str]]] = None  # a text answer not yet accepted
        self._steps = 0  # steps recorded (the runner counts the same: this framework is its only reporter)
        self._usage: Any = None
        self._rejected: Optional[str] = None  # the problems of the answer the output validator sent back
        check_tool_names(ctx.tools.user_tools, OWN_TOOLS, "pydantic-ai")  # refused before the run (exit 2)
        self._user_tools = set(ctx.tools.user_tools.names)

    # ------------------------------------------------------------------ the run

    def run(self) -> FrameworkOutcome:
        return run_coroutine(self._run)  # a loop of its own, also when called from async code

    def close(self) -> None:
        pass  # the sandbox session is the runner's (closed with the run); the agent holds nothing else

    def agent(self) -> Agent[None, Any]:
        """The agent: our root model, the sandbox's tools and the user's, the RLM instructions, the answer's type."""
        retries = self.settings.retries
        output_retries = self.settings.output_retries if self.settings.output_retries is not None else retries
        agent: Agent[None, Any] = Agent(
            RlmModel(self.ctx.root),
            instructions=agent_instructions(self.ctx, preview_chars=self.settings.preview_chars,
                                            user_instructions=self.settings.instructions),
            tools=[Tool(self._run_code, name="run_code", description=TOOL_DESCRIPTIONS["run_code"]),
                   Tool(self._llm_query, name="llm_query", description=TOOL_DESCRIPTIONS["llm_query"]),
                   *self.user_tools()],
            retries={"tools": retries, "output": output_retries},
            output_type=self.output_type(),
            name="rlm",
        )
        agent.output_validator(reject_invalid_reply)
        agent.output_validator(self._hold_to_type)
        return agent

    def user_tools(self) -> list[Tool[None]]:
        """The user's functions as pydantic-ai tools (name, parameters and description from the function; the result
        as text, cut to ``max_output_chars``); a tool's exception is a failed tool result (``ToolFailed``), which the
        model sees and no retry is spent on."""
        limit = self.settings.max_output_chars

        def failed(exc: Exception) -> Any:
            raise ToolFailed(f"error: {tool_error_text(exc)}")

        functions = self.ctx.tools.user_tools.functions(result=lambda value: truncate(tool_result_text(value), limit),
                                                        error=failed)
        return [Tool(function, name=function.__name__) for function in functions]

    def output_type(self) -> Any:
        """What pydantic-ai is asked for: the run's output type when it is an object (the type given, else a
        ``StructuredDict`` of its JSON Schema), text otherwise (an answer then held to the type by the validator)."""
        output = self.ctx.output
        if output is None or output.schema.get("type") != "object":
            return str
        if output.python_type is not None:
            return output.python_type
        from pydantic_ai import StructuredDict
        from pydantic_ai.exceptions import UserError

        try:
            return StructuredDict(output.schema, name=output.schema.get("title"))
        except UserError:  # a schema pydantic-ai cannot take (recursive $defs): text, held to the type
            return str

    def _hold_to_type(self, output: Any) -> Any:
        """An output validator: an answer that does not match the run's output type goes back to the model."""
        try:
            typed_answer(self.ctx.output, output)
        except OutputInvalid as invalid:
            self._rejected = str(invalid)
            raise ModelRetry(ANSWER_REJECTED.format(problems=invalid)) from None
        return output

    async def _run(self) -> FrameworkOutcome:
        agent = self.agent()
        limits = UsageLimits(request_limit=None)  # max_steps (root turns, counted by the host) is the run's limit
        try:
            async with agent.iter(self.ctx.task, usage_limits=limits) as run:
                async for node in run:
                    self._record(node)
                self._usage = run.usage
                output = typed_answer(None, run.result.output) if run.result is not None else None
        except _Finished as finished:
            self._answer_step({"answer": finished.answer, "via": "FINAL() in run_code"})
            return FrameworkOutcome(finished.answer, True, self._metadata())
        except AgentRunError as exc:  # pydantic-ai gave up: its retries used up, an unusable response…
            self._flush_pending_text()
            hint = "raise [framework.pydantic-ai] retries, or look at the last replies"
            raise RlmError(f"pydantic-ai stopped the run: {exc}", hint=hint) from exc
        return FrameworkOutcome(output, output is not None, self._metadata())

    def _metadata(self) -> dict[str, Any]:
        usage = self._usage
        return {"pydantic_ai_requests": usage.requests, "pydantic_ai_tool_calls": usage.tool_calls} if usage else {}

    # ------------------------------------------------------------------ steps as they happen

    def _step(self, action: str, observation: dict[str, Any], kind: str, *, ok: bool = True,
              code: Optional[str] = None, reply: Optional[str] = None) -> None:
        """Record one step now (``kind``: its event kind in the reward table); the budget's refusals propagate."""
        self.ctx.step(action, observation, self.ctx.reward_for(kind, ok), code=code, reply=reply)
        self._steps += 1

    def _answer_step(self, observation: dict[str, Any], reply: Optional[str] = None) -> None:
        self._step("final", observation, "final", reply=reply)

    def _record(self, node: Any) -> None:
        if Agent.is_call_tools_node(node):
            self._record_response(node.model_response)
        elif Agent.is_model_request_node(node):
            self._record_request(node.request)
        elif Agent.is_end_node(node):
            reply = self._pending_text[1] if self._pending_text else None
            self._pending_text = None
            self._answer_step({"answer": typed_answer(None, node.data.output)}, reply=reply)

    def _record_response(self, response: ModelResponse) -> None:
        """A model reply: its tool calls (and the prose beside them) now; a text answer once it is accepted."""
        reply = (response.provider_details or {}).get(REPLY_KEY)
        calls = [part for part in response.parts if isinstance(part, BaseToolCallPart)]
        text = "\n".join(part.content for part in response.parts if isinstance(part, TextPart) and part.content.strip())
        if not calls:
            self._pending_text = (text, reply) if text else None  # the End node or a retry tells what it was
            return
        if text:
            self._step("model_text", {"text": text}, "model_text", reply=reply)
            reply = None  # the reply is on the step of its first part
        for call in calls:
            args = _args(call)
            code = args.get("code") if isinstance(args, dict) and isinstance(args.get("code"), str) else None
            self._step("tool_call", {"tool": call.tool_name, "args": args}, "tool_call", code=code, reply=reply)
            reply = None

    def _record_request(self, request: ModelRequest) -> None:
        """What goes back to the model (retries pydantic-ai asks for, an answer of the wrong type, failed calls, the
        results of the user's tools: run_code and llm_query record their own results as they return)."""
        self._flush_pending_text()
        for part in request.parts:
            outcome = getattr(part, "outcome", "success")
            rejected = self._rejected if isinstance(part, (BaseToolReturnPart, RetryFeedbackPart)) else None
            if rejected is not None and (isinstance(part, RetryFeedbackPart) or outcome == "retried"):
                self._rejected = None
                self._step("final_rejected", {"final_rejected": rejected}, "retry")
            elif isinstance(part, BaseToolReturnPart) and outcome == "success" and part.tool_name in self._user_tools:
                self._step("tool_result", {"tool": part.tool_name, "ok": True,
                                           "output": truncate(part.model_response_str(), 2000)},
                           "tool_result")
            elif isinstance(part, BaseToolReturnPart) and outcome == "retried":
                retry = getattr(part, "retry", None)
                self._step("retry", {"tool": part.tool_name, "cause": getattr(retry, "cause", None),
                                     "feedback": truncate(part.model_response_str(wrap_if_error=False), 2000)},
                           "retry")
            elif isinstance(part, BaseToolReturnPart) and outcome != "success":
                self._step("tool_error", {"tool": part.tool_name, "outcome": outcome,
                                          "output": truncate(part.model_response_str(wrap_if_error=False), 2000)},
                           "tool_result", ok=False)
            elif isinstance(part, RetryFeedbackPart):
                self._step("retry", {"cause": part.retry.cause, "feedback": truncate(part.model_response(), 2000)},
                           "retry")

    def _flush_pending_text(self) -> None:
        """A text answer that was not accepted (sent back, or the run stopped) was model text."""
        if self._pending_text is not None:
            (text, reply), self._pending_text = self._pending_text, None
            self._step("model_text", {"text": text}, "model_text", reply=reply)

    # ------------------------------------------------------------------ the tools

    async def _run_code(self, code: str) -> str:
        """Run Python code in the REPL.

        Args:
            code: the Python code to run; `context`, llm_query(), llm_query_batched() and FINAL() are defined.
        """
        outcome = await asyncio.to_thread(self.ctx.tools.run_code, code)
        text = truncate(outcome.text, self.settings.max_output_chars)
        observation: dict[str, Any] = {"tool": "run_code", "ok": outcome.ok, "output": text}
        if outcome.final is not None:
            observation["final"] = outcome.final
        if outcome.rejected is not None:  # FINAL() with an answer of the wrong type: the model is told, goes on
            observation["final_rejected"] = outcome.rejected
        # the code is on the tool_call step just before: this step is what it gave
        self._step("tool_result" if outcome.ok else "tool_error", observation, "tool_result", ok=outcome.ok)
        if outcome.final is not None:  # the answer: the run ends here, whatever pydantic-ai would do next
            raise _Finished(outcome.final)
        return text

    async def _llm_query(self, prompt: str) -> str:
        """Ask a language model one question.

        Args:
            prompt: the whole question, with the text it is about.
        """
        try:
            answer, ok = await asyncio.to_thread(self.ctx.tools.llm_query, prompt), True
        except RuntimeError as exc:  # how a sub-call failure is reported (model error, max_llm_calls…)
            answer, ok = f"error: {exc}", False
        self._step("tool_result" if ok else "tool_error", {"tool": "llm_query", "ok": ok,
                                                           "output": truncate(answer, 2000)}, "tool_result", ok=ok)
        return answer


def _args(call: BaseToolCallPart) -> Any:
    if isinstance(call.args, dict) or call.args is None:
        return call.args or {}
    try:
        value = json.loads(call.args, strict=False)
    except ValueError:
        return call.args
    return value if isinstance(value, dict) else call.args
