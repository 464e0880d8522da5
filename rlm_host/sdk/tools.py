"""The tools kit: tool calling as text, for any plugin whose model must call tools but has no native tool calls
(a framework over a text-only model, an environment such as the coding harness).

``render_tool_protocol(tools)`` describes the ``ToolSpec`` tools in the prompt; ``parse_tool_reply(reply, tools)``
reads a reply back as a ``ToolCall``, a ``FinalAnswer`` or an ``InvalidReply`` (a ``ToolReply``), with
``coerce_tool_args`` turning its arguments into the declared types; ``format_tool_call`` /
``format_tool_result`` / ``format_tool_final`` write a turn of the conversation back as the model would have.
``tool_reply_format(tools)`` is the ``ReplyFormat`` (a grammar and a JSON schema) that holds a model to the
protocol where its provider can enforce one.

Reference plugins to copy: ``plugins/rlm-adapter-pydantic-ai`` (native tool calls from a text-only model),
``plugins/rlm-harness`` (an environment whose model calls tools as text). Contract suite:
``rlm_host.testing.ToolAgentScenarios``.
"""

from rlm_host.tools.grammar import tool_reply_format
from rlm_host.tools.protocol import (FinalAnswer, InvalidReply, ToolCall, ToolReply, ToolSpec, coerce_tool_args,
                                    format_tool_call, format_tool_final, format_tool_result, parse_tool_reply,
                                    render_tool_protocol)

__all__ = [
    # the tools and what a reply is read as
    "ToolSpec", "ToolCall", "FinalAnswer", "InvalidReply", "ToolReply", "coerce_tool_args",
    # the prompt, the reader and the conversation written back
    "render_tool_protocol", "parse_tool_reply", "format_tool_call", "format_tool_result", "format_tool_final",
    # the reply format a provider can enforce
    "tool_reply_format",
]
