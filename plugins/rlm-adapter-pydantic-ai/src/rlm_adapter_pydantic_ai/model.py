"""``RlmModel``: one of rlm's model roles (``ctx.root``…) as a ``pydantic_ai.models.Model``.

rlm's roles count usage, cost and budgets, retry, record and replay; they take and give text only. So each ``request``
renders pydantic-ai's history as role/content messages, with the tools described in the system message (the host's text
tool protocol, ``rlm_host.sdk.tools``), makes one ``role.complete`` call, and reads the reply back as parts: a
``ToolCallPart`` for ``{"tool": …, "args": …}``, a ``TextPart`` for the final answer. pydantic-ai then does what it does
with native tool calls: runs the tool, or answers an unknown tool or bad arguments with a retry.

A reply that is neither (JSON of the wrong shape) comes back as its text, marked in the response's
``provider_details`` (``rlm_invalid``); an agent rejects it with :func:`reject_invalid_reply` as its output
validator, so the model is asked again instead of the text becoming the answer. An empty reply comes back with
no parts, which pydantic-ai answers with its own retry. The model's exact text is kept in
``provider_details["rlm_reply"]`` and is what later requests show it of its own turn.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional, Sequence

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    InstructionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

import rlm_host.sdk.tools as protocol
from rlm_host.sdk.frameworks import ChatCompactor
from rlm_host.sdk.models import merge_same_role

#: Keys this model writes into ``ModelResponse.provider_details``.
REPLY_KEY, INVALID_KEY = "rlm_reply", "rlm_invalid"
_FINISH = {"stop": "stop", "end_turn": "stop", "length": "length", "max_tokens": "length",
           "content_filter": "content_filter", "tool_calls": "tool_call", "tool_call": "tool_call"}


class RlmModel(Model):
    """A pydantic-ai model answering through an rlm model role (anything with ``complete(messages, purpose=)``
    returning a ``Completion``, and ``name`` / ``provider`` / ``context_window``)."""

    def __init__(self, role: Any, *, purpose: str = "turn") -> None:
        self._role = role
        self._purpose = purpose
        self._compactor = ChatCompactor(role)  # the history kept inside the model's window
        super().__init__(profile={
            "supports_tools": True, "supports_text_output": True, "supports_json_schema_output": False,
            "supports_json_object_output": False, "default_structured_output_mode": "tool",
            "supported_native_tools": frozenset(), "context_window": getattr(role, "context_window", None),
        })

    @property
    def model_name(self) -> str:
        return str(getattr(self._role, "name", "rlm"))

    @property
    def system(self) -> str:
        return str(getattr(self._role, "provider", None) or "rlm")

    async def request(self, messages: list[ModelMessage], model_settings: Optional[ModelSettings],
                      model_request_parameters: ModelRequestParameters) -> ModelResponse:
        _, params = self.prepare_request(model_settings, model_request_parameters)
        tools = tool_specs(params)
        answer_tools = [tool.name for tool in params.output_tools]
        chat = to_chat(messages, instructions=instructions_of(messages, params),
                       protocol_text=protocol.render_tool_protocol(tools, text_answer=params.allow_text_output,
                                                              answer_tools=answer_tools))
        # The role blocks (HTTP, retries, a scripted delay): off the event loop, with the caller's context.
        shape = protocol.tool_reply_format(tools, text_answer=params.allow_text_output)  # enforced where it can be
        chat = await asyncio.to_thread(self._compactor.fit, chat)  # may make one compaction call
        completion = await asyncio.to_thread(self._role.complete, chat, purpose=self._purpose, reply_format=shape)
        parts, invalid = to_parts(completion.text, tools, text_answer=params.allow_text_output,
                                  answer_tools=answer_tools)
        details: dict[str, Any] = {REPLY_KEY: completion.text}
        if invalid:
            details[INVALID_KEY] = invalid
        return ModelResponse(
            parts=parts,
            usage=RequestUsage(input_tokens=completion.input_tokens or 0, output_tokens=completion.output_tokens or 0),
            model_name=completion.model or self.model_name, provider_name=self.system, provider_details=details,
            finish_reason=_FINISH.get(str(completion.finish_reason or "").lower()),  # type: ignore[arg-type]
        )


# ---------------------------------------------------------------------------------------------- requests


def tool_specs(params: ModelRequestParameters) -> list[protocol.ToolSpec]:
    """The tools the model may call now: the function tools shown to it, then the output tools (if any)."""
    tools = list(getattr(params, "declared_function_tools", params.function_tools)) + list(params.output_tools)
    return [protocol.ToolSpec(t.name, t.description or "", t.parameters_json_schema or {}) for t in tools]


def instructions_of(messages: Sequence[ModelMessage], params: ModelRequestParameters) -> str:
    """The agent's instructions for this request (pydantic-ai resolves them into ``instruction_parts``)."""
    if params.instruction_parts is not None:
        return InstructionPart.join(params.instruction_parts) or ""
    for message in reversed(messages):  # a direct model.request() without parameters: the history's own
        if isinstance(message, ModelRequest) and message.instructions:
            return message.instructions
    return ""


def to_chat(messages: Sequence[ModelMessage], *, instructions: str = "", protocol_text: str = "") -> list[dict]:
    """pydantic-ai's history as role/content messages: one system message (the instructions, the system prompts
    leading the history, the protocol), then user and assistant turns (tool results are user turns; consecutive
    turns of one role are merged)."""
    system = [instructions] if instructions.strip() else []
    chat: list[dict[str, str]] = []
    leading = True
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart) and leading:
                    system.append(part.content)
                    continue
                leading = False
                text = request_part_text(part)
                if text:
                    chat.append({"role": "user", "content": text})
        elif isinstance(message, ModelResponse):
            leading = False
            text = response_text(message)
            chat.append({"role": "assistant", "content": text or "(empty reply)"})
    if protocol_text:
        system.append(protocol_text)
    head = [{"role": "system", "content": "\n\n".join(s.strip() for s in system if s.strip())}] if system else []
    return head + merge_same_role(chat)


def request_part_text(part: Any) -> str:
    """The text of one part of a request (empty: nothing to show the model)."""
    if isinstance(part, BaseToolReturnPart):
        outcome = getattr(part, "outcome", "success")
        status = "retry" if outcome == "retried" else "error" if outcome != "success" else "ok"
        return protocol.format_tool_result(part.tool_name, part.model_response_str(wrap_if_error=False), status=status)
    if isinstance(part, RetryFeedbackPart):  # prepare_messages usually turned it into a user prompt already
        return part.model_response()
    if isinstance(part, UserPromptPart):
        return _user_text(part.content)
    if isinstance(part, SystemPromptPart):  # a later system prompt: in a user turn, as pydantic-ai frames them
        return part.content
    content = getattr(part, "content", None)  # parts of newer pydantic-ai versions, when they carry text
    return content if isinstance(content, str) else ""


def response_text(message: ModelResponse) -> str:
    """The model's own turn: its exact reply when this model made it, else its parts in the protocol's form."""
    details = message.provider_details or {}
    if isinstance(details.get(REPLY_KEY), str):
        return details[REPLY_KEY]
    texts, calls = [], []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.content)
        elif isinstance(part, BaseToolCallPart):
            calls.append(protocol.format_tool_call(part.tool_name, part.args if part.args is not None else {}))
    return "\n".join([t for t in texts if t.strip()] + calls)


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    pieces = []
    for item in content:
        if isinstance(item, str):
            pieces.append(item)
        else:  # images, audio, documents: a text-only model gets a note instead
            pieces.append(f"[{type(item).__name__} not shown: this model reads text only]")
    return "\n".join(pieces)


# ---------------------------------------------------------------------------------------------- replies


def to_parts(text: Optional[str], tools: Sequence[protocol.ToolSpec], *, text_answer: bool = True,
             answer_tools: Sequence[str] = ()) -> tuple[list[ModelResponsePart], str]:
    """The parts of a reply, and why it is invalid ("" when it is not)."""
    reply = protocol.parse_tool_reply(text, tools)
    if isinstance(reply, protocol.ToolCall):
        parts: list[ModelResponsePart] = [TextPart(reply.text)] if reply.text else []
        return parts + [ToolCallPart(reply.name, reply.args)], ""
    if isinstance(reply, protocol.FinalAnswer):
        if text_answer or len(answer_tools) != 1:
            return [TextPart(reply.text)], ""
        # a structured answer asked for through an output tool: {"final": {...}} is that tool's call
        spec = next((t for t in tools if t.name == answer_tools[0]), None)
        value = reply.value if reply.value is not None else reply.text
        return [ToolCallPart(answer_tools[0], protocol.coerce_tool_args(value, spec))], ""
    if not reply.text:
        return [], reply.reason  # empty: pydantic-ai asks again for "text or a tool call"
    return [TextPart(reply.text)], reply.reason


def reject_invalid_reply(ctx: RunContext[Any], output: Any) -> Any:
    """An output validator: a reply this model marked invalid is sent back to the model, not taken as the answer."""
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            reason = (message.provider_details or {}).get(INVALID_KEY)
            if reason:
                raise ModelRetry(f"Your reply was not understood: {reason}")
            break
    return output
