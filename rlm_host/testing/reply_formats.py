"""The reply formats of the environments and of the framework runs' text tool protocol, for the tests of providers
that enforce them: each format with the check its own reader makes of a reply (pure_rlm: code blocks or a final
answer; an environment holding its replies to a JSON schema, rlm-env-generic's ``generic`` among them: an action
object the schema accepts; tool_protocol: a call of a known tool or a final answer).

The installed plugins' environments are read from their registrations when ``ENVIRONMENT_REPLY_FORMATS`` is first
used (this package names no plugin): each whose factory declares a ``reply_format`` with a JSON schema.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from rlm_host.environments.kit import parse_action
from rlm_host.environments.repl_format import REPLY_FORMAT as PURE_RLM_REPLY_FORMAT
from rlm_host.environments.repl_format import parse_reply
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

Formats = dict[str, tuple[ReplyFormat, Callable[[str], bool]]]


def _pure_rlm_acts_on(reply: str) -> bool:
    """Whether pure_rlm finds code to run or a final answer in ``reply``."""
    parsed = parse_reply(reply)
    return bool(parsed.code_blocks) or parsed.final_kind is not None


def _schema_accepts(schema: Mapping[str, Any]) -> Callable[[str], bool]:
    """Whether a reply holds an action object (the JSON object ``parse_action`` reads) that ``schema`` accepts."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)
    return lambda reply: (action := parse_action(reply)) is not None and validator.is_valid(action)


def _tool_protocol_acts_on(reply: str) -> bool:
    """Whether a framework run reads ``reply`` as a call of one of the sandbox tools, with a dict of arguments, or as
    a final answer given as ``{"final": …}``."""
    parsed = parse_tool_reply(reply, SANDBOX_TOOL_SPECS)
    if isinstance(parsed, ToolCall):
        return parsed.name in {tool.name for tool in SANDBOX_TOOL_SPECS} and isinstance(parsed.args, dict)
    return isinstance(parsed, FinalAnswer) and reply.lstrip().startswith("{")


def _environment_reply_formats() -> Formats:
    """pure_rlm's format, every installed environment's JSON-schema format, and the tool protocol's."""
    from rlm_host.plugins.host import PluginHost

    formats: Formats = {"pure_rlm": (PURE_RLM_REPLY_FORMAT, _pure_rlm_acts_on)}
    for spec in PluginHost(environ={}).environments():
        try:
            declared = getattr(spec.load(), "reply_format", None)
        except Exception:  # noqa: BLE001 - an environment that cannot be imported here offers nothing to test
            continue
        if isinstance(declared, ReplyFormat) and declared.json_schema is not None:
            formats[spec.name] = (declared, _schema_accepts(declared.json_schema))
    formats["tool_protocol"] = (tool_reply_format(SANDBOX_TOOL_SPECS), _tool_protocol_acts_on)
    return formats


def __getattr__(name: str) -> Any:
    """``ENVIRONMENT_REPLY_FORMATS``: environment name (or ``tool_protocol``) → (its reply format, whether its
    reader can act on a reply), read from the installed plugins on first use."""
    if name != "ENVIRONMENT_REPLY_FORMATS":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    formats = globals()[name] = _environment_reply_formats()
    return formats
