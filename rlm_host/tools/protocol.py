"""Tool calling as text, for models that only take and give text (rlm's model roles).

A framework that expects native tool calls (pydantic-ai, ADK, LangChain…) gets them from a text-only model
through this protocol: the tools are described in the system prompt (:func:`render_tool_protocol`), and the model
answers each turn with ONE JSON object::

    {"tool": "run_code", "args": {"code": "print(len(context))"}}     # call a tool
    {"final": "the answer"}                                          # give the final answer

:func:`parse_tool_reply` reads a reply back as a :class:`ToolCall`, a :class:`FinalAnswer` or an :class:`InvalidReply`
reply. It is forgiving about what models really write: the object may sit in a ```json fence or after some
prose (the first action-shaped object wins), strings may hold raw newlines (code often does), ``name`` /
``arguments`` (OpenAI's spelling) work too, flat arguments (``{"tool": "run_code", "code": "…"}``) are
gathered, and a bare string given for a tool taking one string argument becomes that argument. Plain text with
no JSON object is the final answer. What the protocol does NOT judge is whether the tool exists or the
arguments fit its schema: the framework does that and asks the model to retry, in its own words.

:func:`format_tool_call` and :func:`format_tool_result` write the history back as text the same way, so the model sees
its earlier actions in the form it is asked to use.

Nothing here imports a framework: each framework plugin maps these records to its own message types
(rlm-adapter-pydantic-ai to pydantic-ai's parts).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

from rlm_host.text import json_object_spans


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is told about it: its name, what it does, and the JSON schema of its arguments."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCall:
    """The model calls ``name``. ``args`` is a dict, or the raw value when it was not an object (the framework
    then reports the bad arguments); ``text`` is the prose the reply had around the JSON object."""

    name: str
    args: Union[dict[str, Any], str]
    text: str = ""


@dataclass(frozen=True)
class FinalAnswer:
    """The final answer: ``text``, and ``value`` the JSON value given as ``"final"`` (None for plain text)."""

    text: str
    value: Any = None


@dataclass(frozen=True)
class InvalidReply:
    """A reply that is neither: ``reason`` is what to tell the model (empty ``text``: the reply was empty)."""

    reason: str
    text: str = ""


ToolReply = Union[ToolCall, FinalAnswer, InvalidReply]

_NAME_KEYS = ("tool", "tool_name")  # always a tool call
_LOOSE_NAME_KEYS = ("name",)  # a tool call only with arguments next to it ({"name": "Ada"} may be an answer)
_ARGS_KEYS = ("args", "arguments", "parameters", "input")
_FINAL_KEYS = ("final", "final_answer")
_FENCED = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n?```", re.DOTALL)
_WHOLE_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n(.*?)\n?```$", re.DOTALL)

SHAPE = 'reply with one JSON object: {"tool": "<tool name>", "args": {...}} or {"final": "<answer>"}'


# ---------------------------------------------------------------------------------------------- prompting


def render_tool_protocol(tools: Sequence[ToolSpec], *, text_answer: bool = True,
                         answer_tools: Sequence[str] = ()) -> str:
    """The system prompt section teaching the protocol and listing ``tools``.

    ``text_answer``: the final answer is free text (``{"final": …}`` or plain text); when False, the answer is
    given by calling one of ``answer_tools`` (a framework's structured-output tools, listed in ``tools`` too).
    """
    names = ", ".join(f"`{name}`" for name in answer_tools) or "the answer tool"
    finish = ('- to give the final answer: {"final": "<the answer>"}\nA reply that is not a JSON object also counts as '
              "the final answer, so do not answer before you are done." if text_answer
              else f"- to give the final answer: call {names} with the answer as its arguments.")
    lines = [
        "# How to act",
        "You act by replying with exactly ONE JSON object, and nothing after it:",
        '- to call a tool: {"tool": "<tool name>", "args": {<the arguments>}}',
        finish,
        "Call one tool per reply. Its result comes back in the next message; then decide the next action. "
        "Put code and text inside JSON strings (escape quotes and backslashes).",
        "",
        "# Tools",
    ]
    for tool in tools:
        schema = _schema_text(tool.parameters)
        lines += ["", f"## {tool.name}({_signature(tool.parameters)})"] + [
            part for part in (tool.description.strip(), schema and f"Arguments (JSON schema): {schema}") if part]
    if not tools:
        lines.append("(none: give the final answer)")
    return "\n".join(lines)


def _signature(schema: Mapping[str, Any]) -> str:
    required = set(schema.get("required") or ())
    return ", ".join(f"{name}: {prop.get('type', 'any') if isinstance(prop, Mapping) else 'any'}"
                     + ("" if name in required else "?") for name, prop in (schema.get("properties") or {}).items())


def _schema_text(schema: Mapping[str, Any]) -> str:
    """The schema, compact, without the noise models do not need (titles, additionalProperties: false)."""

    def clean(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: clean(v) for k, v in value.items() if k != "title" and not (k == "additionalProperties"
                                                                                   and v is False)}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    cleaned = clean(dict(schema))
    if not cleaned.get("properties") and cleaned.get("type") == "object":
        return ""
    return json.dumps(cleaned, ensure_ascii=False, separators=(", ", ": "))


# ---------------------------------------------------------------------------------------------- history


def format_tool_call(name: str, args: Any, text: str = "") -> str:
    """A tool call as the model should have written it (with its prose first, when it had some)."""
    action = json.dumps({"tool": name, "args": args}, ensure_ascii=False)
    return f"{text.strip()}\n{action}" if text.strip() else action


def format_tool_final(answer: str) -> str:
    """A final answer as the model should have written it."""
    return json.dumps({"final": answer}, ensure_ascii=False)


def format_tool_result(name: str, content: str, *, status: str = "ok") -> str:
    """The text of a tool result: ``status`` is "ok", "error" (the tool ran and failed) or "retry" (the call
    was rejected before running: unknown tool, bad arguments)."""
    head = {"ok": f"Result of {name}:", "error": f"{name} failed:",
            "retry": f"Your call of {name} was rejected (fix it and call again):"}.get(status, f"{name}:")
    return f"{head}\n{content}" if content else f"{head} (empty)"


# ---------------------------------------------------------------------------------------------- parsing


def parse_tool_reply(text: Optional[str], tools: Sequence[ToolSpec] = ()) -> ToolReply:
    """What a reply asks for (see the module docstring); ``tools`` only help to fix loose arguments."""
    if text is None or not text.strip():
        return InvalidReply("the reply was empty: " + SHAPE)
    named = {tool.name: tool for tool in tools}
    for obj, (start, end) in json_objects(text):
        action = _action(obj, named)
        if action is not None:  # a tool call keeps the prose around its object, an invalid one the whole reply
            prose = {ToolCall: _prose(text, start, end), InvalidReply: text}.get(type(action))
            return action if prose is None else replace(action, text=prose)
    fenced = _WHOLE_FENCE.match(text.strip())  # the reply without the fence around it, if it is one
    stripped = fenced.group(1).strip() if fenced else text.strip()
    if stripped.startswith("{"):  # an object is an action or a mistake; other JSON (a list…) may be an answer
        try:
            json.loads(stripped, strict=False)
        except ValueError:
            return InvalidReply(f"the reply looks like JSON but does not parse: {SHAPE}", text)
        return InvalidReply(f"the JSON reply is neither a tool call nor a final answer: {SHAPE}", text)
    return FinalAnswer(text.strip())


def json_objects(text: str) -> Iterator[tuple[dict[str, Any], tuple[int, int]]]:
    """Each JSON object of ``text`` with its span: fenced blocks first, then every balanced top-level ``{…}``
    that parses (raw newlines inside strings allowed)."""
    spans = {(m.start(), m.end()): m.group(1) for m in _FENCED.finditer(text)}
    for start, end in json_object_spans(text):
        spans.setdefault((start, end), text[start:end])
    for span, candidate in spans.items():
        try:
            value = json.loads(candidate.strip(), strict=False)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value, span


def _action(obj: dict[str, Any], tools: Mapping[str, ToolSpec]) -> Optional[ToolReply]:
    name_key = next((k for k in _NAME_KEYS if k in obj), None)
    args_key = next((k for k in _ARGS_KEYS if k in obj), None)
    if name_key is None and args_key is not None:
        name_key = next((k for k in _LOOSE_NAME_KEYS if k in obj), None)
    if name_key is not None:
        name = obj[name_key]
        if not isinstance(name, str) or not name.strip():
            return InvalidReply(f"'{name_key}' must be the name of a tool: {SHAPE}")
        # the arguments, or flat ones: {"tool": "run_code", "code": "…"}
        args = obj[args_key] if args_key is not None else {k: v for k, v in obj.items() if k != name_key}
        return ToolCall(name.strip(), coerce_tool_args(args, tools.get(name.strip())))
    final_key = next((k for k in _FINAL_KEYS if k in obj), None)
    if final_key is not None:
        value = obj[final_key]
        answer = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return FinalAnswer(answer.strip(), value)
    return None


def coerce_tool_args(args: Any, tool: Optional[ToolSpec] = None) -> Union[dict[str, Any], str]:
    """Arguments as an object when they can be read as one (a JSON string of an object; a bare string for a tool
    taking one string argument); else the raw value, as JSON text, for the framework to reject."""
    if args is None:
        return {}
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            parsed = json.loads(args, strict=False)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        only = _single_string_parameter(tool)
        return {only: args} if only is not None else args
    return json.dumps(args, ensure_ascii=False)


def _single_string_parameter(tool: Optional[ToolSpec]) -> Optional[str]:
    if tool is None:
        return None
    properties = tool.parameters.get("properties") or {}
    required = list(tool.parameters.get("required") or ())
    names = required if len(required) == 1 else list(properties) if len(properties) == 1 else []
    if len(names) == 1 and (properties.get(names[0]) or {}).get("type") == "string":
        return names[0]
    return None


def _prose(text: str, start: int, end: int) -> str:
    return "\n".join(p for p in (text[:start].strip(), text[end:].strip()) if p and p not in ("```", "```json"))
