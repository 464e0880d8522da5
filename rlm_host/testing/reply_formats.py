"""The reply formats of the host's environments and of the framework runs' text tool protocol, for the tests of
providers that enforce them: each format with the check its own reader makes of a reply (pure_rlm: code blocks or a
final answer; generic: an action object naming a known action; tool_protocol: a call of a known tool or a final
answer)."""

from __future__ import annotations

from typing import Callable

from rlm_host.environments.generic import ACTION_SCHEMA
from rlm_host.environments.kit import parse_action
from rlm_host.environments.generic import REPLY_FORMAT as GENERIC_REPLY_FORMAT
from rlm_host.environments.pure_rlm.parsing import parse_reply
from rlm_host.environments.repl_format import REPLY_FORMAT as PURE_RLM_REPLY_FORMAT
from rlm_host.tools.grammar import tool_reply_format
from rlm_host.tools.protocol import FinalAnswer, ToolCall, ToolSpec, parse_tool_reply
from rlm_host.models.protocol import ReplyFormat

#: The sandbox tools every agent framework offers (rlm_host.frameworks.tools), as the tool protocol shows them.
SANDBOX_TOOL_SPECS = (
    ToolSpec("run_code", "Run Python code.", {"type": "object", "properties": {"code": {"type": "string"}},
                                              "required": ["code"]}),
    ToolSpec("llm_query", "Ask a language model.", {"type": "object", "properties": {"prompt": {"type": "string"}},
                                                    "required": ["prompt"]}),
)


def _pure_rlm_acts_on(reply: str) -> bool:
    """Whether pure_rlm finds code to run or a final answer in ``reply``."""
    parsed = parse_reply(reply)
    return bool(parsed.code_blocks) or parsed.final_kind is not None


def _generic_acts_on(reply: str) -> bool:
    """Whether the generic environment finds an action object naming one of its actions in ``reply``."""
    action = parse_action(reply)
    return action is not None and action.get("action") in ACTION_SCHEMA["properties"]["action"]["enum"]


def _tool_protocol_acts_on(reply: str) -> bool:
    """Whether a framework run reads ``reply`` as a call of one of the sandbox tools, with a dict of arguments, or as
    a final answer given as ``{"final": …}``."""
    parsed = parse_tool_reply(reply, SANDBOX_TOOL_SPECS)
    if isinstance(parsed, ToolCall):
        return parsed.name in {tool.name for tool in SANDBOX_TOOL_SPECS} and isinstance(parsed.args, dict)
    return isinstance(parsed, FinalAnswer) and reply.lstrip().startswith("{")


#: Environment name (or ``tool_protocol``) → (its reply format, whether its reader can act on a reply).
ENVIRONMENT_REPLY_FORMATS: dict[str, tuple[ReplyFormat, Callable[[str], bool]]] = {
    "pure_rlm": (PURE_RLM_REPLY_FORMAT, _pure_rlm_acts_on),
    "generic": (GENERIC_REPLY_FORMAT, _generic_acts_on),
    "tool_protocol": (tool_reply_format(SANDBOX_TOOL_SPECS), _tool_protocol_acts_on),
}

__all__ = ["ENVIRONMENT_REPLY_FORMATS"]
