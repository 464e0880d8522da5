"""Reading a root model's reply: ```repl code blocks, and a FINAL(...) / FINAL_VAR(...) line in the text.

A final answer in the text counts only at the start of a line outside code, so a sentence that merely
mentions FINAL does not end the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_FENCE_OPEN = re.compile(r"```[ \t]*(repl|python|py)[ \t]*\n", re.IGNORECASE)
_ANY_FENCE = re.compile(r"```[^\n]*\n.*?(```|\Z)", re.DOTALL)
_FINAL_LINE = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\((.*)", re.MULTILINE | re.DOTALL)


@dataclass
class ParsedReply:
    """Code blocks in order, whether the last one was left unclosed, and a final answer written in text."""

    code_blocks: list[str] = field(default_factory=list)
    unclosed_fence: bool = False
    final_kind: Optional[str] = None  # "direct" or "variable"
    final_text: Optional[str] = None


def parse_reply(text: str) -> ParsedReply:
    parsed = ParsedReply()
    position = 0
    while True:
        opening = _FENCE_OPEN.search(text, position)
        if opening is None:
            break
        closing = text.find("```", opening.end())
        if closing == -1:  # an unclosed fence: run what is there, and say so
            parsed.code_blocks.append(text[opening.end():].rstrip())
            parsed.unclosed_fence = True
            break
        block = text[opening.end():closing]
        if block.strip():
            parsed.code_blocks.append(block)
        position = closing + 3
    prose = _ANY_FENCE.sub("", text)
    match = _FINAL_LINE.search(prose)
    if match:
        kind = "variable" if match.group(1) == "FINAL_VAR" else "direct"
        argument = _closing_argument(match.group(2))
        if argument is not None:
            parsed.final_kind = kind
            parsed.final_text = _unquote(argument) if kind == "direct" else _unquote(argument).strip()
    return parsed


def _closing_argument(rest: str) -> Optional[str]:
    """The text up to the parenthesis closing FINAL( … ); None when there is none."""
    depth = 1
    quote: Optional[str] = None
    for index, char in enumerate(rest):
        if quote:
            if char == quote and rest[index - 1] != "\\":
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return rest[:index].strip()
    stripped = rest.rstrip()
    return stripped[:-1].strip() if stripped.endswith(")") else None


def _unquote(value: str) -> str:
    for quote in ('"""', "'''", '"', "'"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote): -len(quote)]
    return value
