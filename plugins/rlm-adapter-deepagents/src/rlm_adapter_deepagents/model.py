"""``RlmChatModel``: one of rlm's model roles (``ctx.root``…) as a LangChain ``BaseChatModel``.

rlm's roles count usage, cost and budgets, retry, record and replay; they take and give text only. So
``bind_tools`` records the tools (a new model, as LangChain expects) and each ``_generate`` renders LangChain's
messages as role/content messages with the bound tools described in the system message (the host's text tool
protocol, ``rlm_host.sdk.tools``), makes ONE ``role.complete`` call and reads the reply back as an
``AIMessage``: ``tool_calls`` (with ids) for ``{"tool": …, "args": …}``, ``content`` for the final answer, and
``usage_metadata`` from the call's token counts. Whether the tool exists and its arguments fit is the
framework's judgement (LangChain's ToolNode answers with an error ToolMessage, and the run goes on).

A reply that is neither (JSON of the wrong shape, or empty) comes back as its text with
``additional_kwargs["rlm_invalid"]`` saying why; the framework's middleware sends it back to the model. The model's
exact text is kept in ``additional_kwargs["rlm_reply"]`` and is what later requests show it of its own turn.
"""

from __future__ import annotations

import uuid
from typing import Any, Optional, Sequence

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict

import rlm_host.sdk.tools as protocol
from rlm_host.sdk.frameworks import ChatCompactor
from rlm_host.sdk.models import merge_same_role

#: Keys this model writes into ``AIMessage.additional_kwargs``.
REPLY_KEY, INVALID_KEY = "rlm_reply", "rlm_invalid"


class RlmChatModel(BaseChatModel):
    """A LangChain chat model answering through an rlm model role (anything with ``complete(messages, purpose=)``
    returning a ``Completion``, and ``name``)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    role: Any
    purpose: str = "turn"
    tool_specs: list[Any] = []
    #: the history kept inside the model's window; shared by this model's tool-bound copies (one per agent)
    compactor: Any = None
    #: describe each bound tool by the first paragraph of its description only (small context windows)
    brief_tools: bool = False

    @property
    def _llm_type(self) -> str:
        return "rlm"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": str(getattr(self.role, "name", "rlm"))}

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> "RlmChatModel":
        """This model with ``tools`` described to it (LangChain tools, functions or OpenAI tool dicts)."""
        specs = []
        for tool in tools:
            function = convert_to_openai_tool(tool)["function"]
            description = function.get("description", "") or ""
            if self.brief_tools:
                description = description.strip().split("\n\n")[0]
            specs.append(protocol.ToolSpec(function["name"], description, function.get("parameters") or {}))
        return self.model_copy(update={"tool_specs": specs})

    def _generate(self, messages: list[BaseMessage], stop: Optional[list[str]] = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        chat = to_chat(messages, protocol.render_tool_protocol(self.tool_specs))
        if self.compactor is None:
            self.compactor = ChatCompactor(self.role)
        chat = self.compactor.fit(chat)  # may make one compaction call
        completion = self.role.complete(chat, purpose=self.purpose, reply_format=protocol.tool_reply_format(
            self.tool_specs))  # the tool protocol's shape, enforced where the provider can
        message = to_message(completion.text, self.tool_specs)
        usage_in, usage_out = completion.input_tokens or 0, completion.output_tokens or 0
        message.usage_metadata = {"input_tokens": usage_in, "output_tokens": usage_out,
                                  "total_tokens": usage_in + usage_out}
        message.response_metadata = {"model_name": completion.model or str(getattr(self.role, "name", "rlm")),
                                     "finish_reason": completion.finish_reason}
        return ChatResult(generations=[ChatGeneration(message=message)])


# ---------------------------------------------------------------------------------------------- requests


def to_chat(messages: Sequence[BaseMessage], protocol_text: str = "") -> list[dict[str, str]]:
    """LangChain's messages as role/content messages: one system message (the system messages, then the
    protocol), then user and assistant turns (tool results are user turns; consecutive turns are merged)."""
    system: list[str] = []
    chat: list[dict[str, str]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            system.append(message.text)
        elif isinstance(message, AIMessage):
            chat.append({"role": "assistant", "content": assistant_text(message) or "(empty reply)"})
        elif isinstance(message, ToolMessage):
            status = "error" if message.status == "error" else "ok"
            result = protocol.format_tool_result(message.name or "tool", message.text, status=status)
            chat.append({"role": "user", "content": result})
        elif isinstance(message, HumanMessage):
            chat.append({"role": "user", "content": message.text})
        else:  # other message kinds (a chat message of another role): their text, as the user's
            if message.text:
                chat.append({"role": "user", "content": message.text})
    if protocol_text:
        system.append(protocol_text)
    head = [{"role": "system", "content": "\n\n".join(s.strip() for s in system if s.strip())}] if system else []
    return head + merge_same_role(chat)


def assistant_text(message: AIMessage) -> str:
    """The model's own turn: its exact reply when this model made it, else its parts in the protocol's form."""
    reply = message.additional_kwargs.get(REPLY_KEY)
    if isinstance(reply, str):
        return reply
    calls = [protocol.format_tool_call(call["name"], call.get("args") or {}) for call in message.tool_calls]
    return "\n".join(([message.text] if message.text.strip() else []) + calls)


# ---------------------------------------------------------------------------------------------- replies


def to_message(text: Optional[str], tools: Sequence[protocol.ToolSpec]) -> AIMessage:
    """The ``AIMessage`` of a reply: its tool call (the prose beside it as content), its answer, or its text
    marked invalid."""
    reply = protocol.parse_tool_reply(text, tools)
    extra: dict[str, Any] = {REPLY_KEY: text or ""}
    if isinstance(reply, protocol.ToolCall):
        args = reply.args if isinstance(reply.args, dict) else {"__raw_arguments__": reply.args}
        call = {"name": reply.name, "args": args, "id": f"call_{uuid.uuid4().hex[:12]}", "type": "tool_call"}
        return AIMessage(content=reply.text, tool_calls=[call], additional_kwargs=extra)
    if isinstance(reply, protocol.FinalAnswer):
        return AIMessage(content=reply.text, additional_kwargs=extra)
    extra[INVALID_KEY] = reply.reason
    return AIMessage(content=reply.text, additional_kwargs=extra)
