"""The shape of a REPL-loop reply (pure_rlm's, and adk-rlm's in a framework run), and its reader.

The grammar (GBNF) is for connectors that enforce it while the model writes (llama.cpp in-process or served, vLLM,
SGLang): an optional line of prose, then one or two ```repl blocks (prose between them allowed) optionally followed
by a ``FINAL(...)`` / ``FINAL_VAR(...)`` line, or that line alone. Every reply it allows is read by
:func:`parse_reply` as code blocks, a final answer, or both (the code runs first, as it does for any reply), so
even a tiny model's every step runs code or ends the run. Lines, blocks and names are bounded: a model that loops
stops at the grammar's end or, before it, at its ``max_tokens``. Two blocks, not more: a small model copying the
prompt's example otherwise repeats its last block, and a larger one that wants a third writes it in its next step,
having seen the first two run.

The reader takes ```repl code blocks, and a FINAL(...) / FINAL_VAR(...) line in the text (also in a synthesis
reply: ``synthesized_answer``). A final answer in the text counts only at the start of a line outside code, so a
sentence that merely mentions FINAL does not end the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from rlm_host.environments.kit import answer_text
from rlm_host.models.protocol import ReplyFormat
from rlm_host.results import FinalSignal

GRAMMAR = r"""
root   ::= (prose "\n")? (blocks ("\n" final)? | final)
prose  ::= [^`\n]{1,200}
blocks ::= block ("\n" (prose "\n")? block)?
block  ::= "```repl\n" line{1,40} "```"
line   ::= [^`\n]{0,200} "\n"
final  ::= "FINAL(" [^\n]{1,500} ")" | "FINAL_VAR(" name ")"
name   ::= [a-zA-Z_] [a-zA-Z0-9_]{0,63}
"""

REPLY_FORMAT = ReplyFormat("pure_rlm", gbnf=GRAMMAR.strip() + "\n")

_NEWLINES = re.compile(r"\r\n?")
_OPENING = re.compile(r"```[ \t]*([^\n`]*)\n")  # a fence and its language, up to the end of its line
_CLOSING = re.compile(r"^[ \t]*```", re.MULTILINE)  # closes only at the start of a line: never a ``` in a string
_CODE_LANGUAGES = frozenset({"repl", "python", "py"})
_FINAL_LINE = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\((.*)", re.MULTILINE | re.DOTALL)


@dataclass
class ParsedReply:
    """Code blocks in order, whether the last one was left unclosed, and a final answer written in text."""

    code_blocks: list[str] = field(default_factory=list)
    unclosed_fence: bool = False
    final_kind: Optional[str] = None  # "direct" or "variable"
    final_text: Optional[str] = None


def parse_reply(text: str) -> ParsedReply:
    """One pass over the reply, linear in its length whatever it holds; line endings may be CRLF or CR."""
    text = _NEWLINES.sub("\n", text)
    parsed = ParsedReply()
    prose: list[str] = []
    position = 0
    while True:
        opening = _OPENING.search(text, position)
        if opening is None:
            prose.append(text[position:])
            break
        prose.append(text[position:opening.start()])
        closing = _CLOSING.search(text, opening.end())
        body = text[opening.end():closing.start() if closing else len(text)]
        if opening.group(1).strip().lower() in _CODE_LANGUAGES:
            if closing is None:  # an unclosed fence: run what is there, and say so
                body = body.rstrip()
                parsed.unclosed_fence = bool(body.strip())
            if body.strip():
                parsed.code_blocks.append(body)
        if closing is None:
            break
        position = closing.end()
    match = _FINAL_LINE.search("".join(prose))  # a FINAL in a fence (code or an example) is not one in text
    if match:
        kind = "variable" if match.group(1) == "FINAL_VAR" else "direct"
        argument = _closing_argument(match.group(2))
        if argument is not None:
            parsed.final_kind = kind
            parsed.final_text = _unquote(argument) if kind == "direct" else _unquote(argument).strip()
    return parsed


def synthesized_answer(text: Optional[str], session: Any = None) -> Optional[str]:
    """A synthesis reply as the run's answer: its text, unless it ends the run the REPL's way despite the prompt
    (a ``FINAL(x)`` / ``FINAL_VAR(name)`` line, as a model used to its loop writes): then the answer that line
    names — ``x``, or the variable's value from ``session`` (None when there is no such variable, or no session)."""
    stripped = (text or "").strip()
    if not stripped:
        return None
    parsed = parse_reply(stripped)
    if parsed.final_kind == "direct":
        return parsed.final_text
    if parsed.final_kind == "variable":
        if session is None or not parsed.final_text:
            return None
        try:
            value = session.get_variable(parsed.final_text)
        except KeyError:
            return None
        return answer_text(FinalSignal(kind="variable", var=parsed.final_text, value=value))
    return stripped


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
