"""The text tool protocol's reply shape as a reply format (a llama.cpp grammar and a JSON schema), so a provider
that enforces one holds even a small model to ``{"tool": …, "args": {…}}`` / ``{"final": "…"}`` in a framework run.

The grammar names each tool; a tool whose arguments are plain named values (strings, numbers, booleans) gets
those keys, required ones first and in order, so ``run_code`` must carry its ``code``; any other tool takes any
JSON object. JSON strings hold no raw control characters (a newline in code is written ``\\n``): the reply parses
as strict JSON, which the JSON-schema path of some servers does not ensure (llama-cpp-python's lets strings hold
raw newlines), hence the grammar is given too and preferred where both are supported.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from rlm_host.tools.protocol import ToolSpec
from rlm_host.models.protocol import ReplyFormat

_JSON_RULES = r"""
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws (string ws ":" ws value (ws "," ws string ws ":" ws value)*)? ws "}"
array  ::= "[" ws (value (ws "," ws value)*)? ws "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
ws     ::= [ \t\n]{0,4}
"""

_SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean"}


def tool_reply_format(tools: Sequence[ToolSpec], *, text_answer: bool = True) -> ReplyFormat:
    """The reply format of one turn offering ``tools`` (``text_answer``: ``{"final": …}`` is allowed too)."""
    names = [tool.name for tool in tools]
    final = text_answer or not names  # a turn offering no tool can only answer
    rules = [f'call{index} ::= {_literal(tool.name)} ws "," ws "\\"args\\"" ws ":" ws {_args_rule(tool.parameters)}'
             for index, tool in enumerate(tools)]
    if names:
        rules.insert(0, 'call ::= "{" ws "\\"tool\\"" ws ":" ws (' + " | ".join(f"call{i}" for i in range(len(names)))
                     + ') ws "}"')
    if final:
        rules.append('final ::= "{" ws "\\"final\\"" ws ":" ws string ws "}"')
    choices = ["call"] * bool(names) + ["final"] * final
    grammar = "root ::= (" + " | ".join(choices) + ")\n" + "\n".join(rules) + "\n" + _JSON_RULES.strip() + "\n"
    schema: dict[str, Any] = {"oneOf": []}
    if names:
        schema["oneOf"].append({"type": "object", "properties": {"tool": {"enum": names}, "args": {"type": "object"}},
                                "required": ["tool", "args"], "additionalProperties": False})
    if final:
        schema["oneOf"].append({"type": "object", "properties": {"final": {"type": "string"}}, "required": ["final"],
                                "additionalProperties": False})
    return ReplyFormat("tool_protocol:" + ",".join(names), gbnf=grammar, json_schema=schema)


def _literal(name: str) -> str:
    """A JSON string literal as a GBNF literal: ``run_code`` → ``"\\"run_code\\""``."""
    return json.dumps(json.dumps(name))


def _args_rule(parameters: Mapping[str, Any]) -> str:
    """The arguments of a tool: its named scalar values in order (optional ones may be left out), else any object."""
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping) or not properties:
        return "object"
    kinds = {}
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, Mapping) else None
        if kind not in _SCALARS or not re.fullmatch(r"[A-Za-z0-9_\-]{1,64}", str(name)):
            return "object"  # arrays, nested objects, unions: any object, the framework checks them
        kinds[str(name)] = _SCALARS[kind]
    required = [name for name in parameters.get("required") or () if name in kinds]
    if not required:
        return "object"  # nothing required: any object (a grammar of optional keys only would allow a leading comma)
    pairs = {name: f"{_literal(name)} ws \":\" ws {kind}" for name, kind in kinds.items()}
    body = ' ws "," ws '.join(pairs[name] for name in required)
    body += "".join(f' (ws "," ws {pair})?' for name, pair in pairs.items() if name not in required)  # each may follow
    return f'"{{" ws {body} ws "}}"'
