"""``RlmLlm``: one of rlm's model roles (``ctx.root``…) as a ``google.adk.models.BaseLlm``.

rlm's roles count usage, cost and budgets, retry, record and replay; they take and give text only. So each
``generate_content_async`` renders ADK's request (its system instruction, its contents, the function
declarations of its tools) as role/content messages, with the tools described in the system message (the host's
text tool protocol, ``rlm_host.sdk.tools``), makes ONE ``role.complete`` call (in a worker thread: it
blocks), and yields one ``LlmResponse``: a ``function_call`` part for ``{"tool": …, "args": …}``, a text part for
the final answer, with the call's token counts as ``usage_metadata``. ADK then does what it does with native
function calls: runs the tool, or answers an unknown tool or missing arguments with an ``{"error": …}``
function response the model sees.

A reply that is neither (JSON of the wrong shape, or an empty reply) comes back as its text with
``custom_metadata[INVALID_KEY]`` saying why: ADK would take it as the final answer, so the framework sends it back
to the model instead. The model's exact text is in ``custom_metadata[REPLY_KEY]``.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, Optional, Sequence

from google.adk.models import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import ConfigDict, PrivateAttr

import rlm_host.sdk.tools as protocol
from rlm_host.sdk.frameworks import ChatCompactor, tool_result_text
from rlm_host.sdk.models import merge_same_role

#: Keys this model writes into ``LlmResponse.custom_metadata``.
REPLY_KEY, INVALID_KEY = "rlm_reply", "rlm_invalid"
#: Keys of a tool's result that are for the trajectory, never shown to the model (a callback's metadata).
HIDDEN_KEYS = ("metadata", "refused")
_FINISH = {"stop": types.FinishReason.STOP, "end_turn": types.FinishReason.STOP,
           "length": types.FinishReason.MAX_TOKENS, "max_tokens": types.FinishReason.MAX_TOKENS,
           "content_filter": types.FinishReason.SAFETY}


class RlmLlm(BaseLlm):
    """An ADK model answering through an rlm model role (anything with ``complete(messages, purpose=)`` returning
    a ``Completion``, and ``name``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model: str = "rlm"
    _role: Any = PrivateAttr(default=None)
    _purpose: str = PrivateAttr(default="turn")
    _chat_compactor: Any = PrivateAttr(default=None)  # the history kept inside the model's window

    def __init__(self, role: Any, *, purpose: str = "turn", **data: Any) -> None:
        super().__init__(model=str(data.pop("model", None) or getattr(role, "name", None) or "rlm"), **data)
        self._role = role
        self._purpose = purpose
        self._chat_compactor = ChatCompactor(role)

    async def generate_content_async(self, llm_request: LlmRequest,
                                     stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        tools = tool_specs(llm_request)
        chat = to_chat(llm_request, protocol_text=protocol.render_tool_protocol(tools))
        # The role blocks (HTTP, retries, a scripted delay): off the event loop. StepLimitReached (max_steps) and
        # the role's errors propagate out of ADK untouched.
        chat = await asyncio.to_thread(self._chat_compactor.fit, chat)  # may make one compaction call
        completion = await asyncio.to_thread(self._role.complete, chat, purpose=self._purpose,
                                             reply_format=protocol.tool_reply_format(tools))  # enforced where it can be
        yield to_response(completion, tools, model=self.model)


# ---------------------------------------------------------------------------------------------- requests


def tool_specs(llm_request: LlmRequest) -> list[protocol.ToolSpec]:
    """The function declarations of the request's tools, as the protocol describes them."""
    specs = []
    for tool in llm_request.config.tools or []:
        for declaration in getattr(tool, "function_declarations", None) or []:
            specs.append(protocol.ToolSpec(declaration.name or "", declaration.description or "",
                                           _schema(declaration)))
    return specs


def _schema(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    if isinstance(declaration.parameters_json_schema, dict):
        return declaration.parameters_json_schema
    if declaration.parameters is not None:  # a genai Schema (types in upper case): as JSON schema, lower case
        return _lower_types(declaration.parameters.model_dump(mode="json", exclude_none=True))
    return {}


def _lower_types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower_types(v) for v in value]
    return value


def to_chat(llm_request: LlmRequest, *, protocol_text: str = "") -> list[dict[str, str]]:
    """ADK's request as role/content messages: one system message (the system instruction, then the protocol),
    then user and assistant turns (function responses are user turns; consecutive turns of one role are merged)."""
    system = [instruction_text(llm_request.config.system_instruction)]
    chat: list[dict[str, str]] = []
    for content in llm_request.contents:
        role = "assistant" if content.role == "model" else "user"
        text = model_turn_text(content) if role == "assistant" else user_turn_text(content)
        if text or role == "assistant":
            chat.append({"role": role, "content": text or "(empty reply)"})
    if protocol_text:
        system.append(protocol_text)
    joined = "\n\n".join(s.strip() for s in system if s and s.strip())
    return ([{"role": "system", "content": joined}] if joined else []) + merge_same_role(chat)


def instruction_text(instruction: Any) -> str:
    if instruction is None:
        return ""
    if isinstance(instruction, str):
        return instruction
    if isinstance(instruction, types.Content):
        return "\n".join(part.text for part in instruction.parts or [] if part.text)
    if isinstance(instruction, types.Part):
        return instruction.text or ""
    if isinstance(instruction, (list, tuple)):
        return "\n".join(instruction_text(item) for item in instruction)
    return str(instruction)


def model_turn_text(content: types.Content) -> str:
    """The model's own turn in the protocol's form: its prose, then its tool call."""
    texts, calls = [], []
    for part in content.parts or []:
        if part.function_call is not None:
            calls.append(protocol.format_tool_call(part.function_call.name or "", part.function_call.args or {}))
        elif part.text and not part.thought:
            texts.append(part.text)
    return "\n".join([t for t in texts if t.strip()] + calls)


def user_turn_text(content: types.Content) -> str:
    pieces = []
    for part in content.parts or []:
        if part.function_response is not None:
            pieces.append(function_response_text(part.function_response))
        elif part.text:
            pieces.append(part.text)
        elif part.inline_data is not None or part.file_data is not None:
            pieces.append("[a file not shown: this model reads text only]")
    return "\n\n".join(pieces)


def function_response_text(response: types.FunctionResponse) -> str:
    """A tool's result as the protocol shows it: ours carry ``ok`` / ``output``; ADK's rejections of a call
    (unknown tool, missing arguments) carry ``error`` and come back as a rejection to fix."""
    name, value = response.name or "tool", response.response or {}
    status, text = result_status(value)
    return protocol.format_tool_result(name, text, status=status)


def result_status(value: dict[str, Any]) -> tuple[str, str]:
    """("ok" | "error" | "retry", the text) of a function response's payload (its ``HIDDEN_KEYS`` left out)."""
    value = {key: item for key, item in value.items() if key not in HIDDEN_KEYS}
    if "output" in value:
        return ("ok" if value.get("ok", True) else "error"), str(value["output"])
    if set(value) == {"error"}:
        return "retry", str(value["error"])
    if set(value) == {"result"}:
        return "ok", tool_result_text(value["result"])
    return "ok", tool_result_text(value)


# ---------------------------------------------------------------------------------------------- replies


def to_response(completion: Any, tools: Sequence[protocol.ToolSpec], *, model: str = "") -> LlmResponse:
    """One reply as ADK's response: a function call, the answer's text, or (invalid) the text marked so."""
    text = completion.text
    reply = protocol.parse_tool_reply(text, tools)
    metadata: dict[str, Any] = {REPLY_KEY: text}
    parts: list[types.Part] = []
    if isinstance(reply, protocol.ToolCall):
        if reply.text:
            parts.append(types.Part(text=reply.text))
        args = reply.args if isinstance(reply.args, dict) else {"_invalid_arguments": reply.args}
        parts.append(types.Part(function_call=types.FunctionCall(name=reply.name, args=args)))
    elif isinstance(reply, protocol.FinalAnswer):
        parts.append(types.Part(text=reply.text))
    else:
        metadata[INVALID_KEY] = reply.reason
        parts.append(types.Part(text=reply.text or ""))
    inp, out = completion.input_tokens or 0, completion.output_tokens or 0
    return LlmResponse(
        content=types.Content(role="model", parts=parts),
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=inp, candidates_token_count=out,
                                                                  total_token_count=inp + out),
        model_version=completion.model or model or None,
        finish_reason=_FINISH.get(str(completion.finish_reason or "").lower(), types.FinishReason.STOP),
        custom_metadata=metadata,
    )


def reply_of(event: Any) -> Optional[str]:
    """The model's exact text behind an ADK event (None for events no model reply made)."""
    metadata = getattr(event, "custom_metadata", None) or {}
    value = metadata.get(REPLY_KEY)
    return value if isinstance(value, str) else None
