"""Reading a root reply of the ``rlms`` loop: its ```repl blocks, in order, and a ``FINAL(...)`` /
``FINAL_VAR(...)`` line written outside them (rlm's way of finishing in text, kept beside the authors' ``answer``
dict).

As in the authors' loop, only fences marked ``repl`` run, and a block runs once its closing fence (at the start
of a line) is there; a fence left open is reported, not run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

_OPEN = re.compile(r"```repl[ \t]*\n")
_CLOSE = re.compile(r"^[ \t]*```", re.MULTILINE)
_FINAL = re.compile(r"^[ \t]*(FINAL_VAR|FINAL)\((.*)\)[ \t]*$", re.MULTILINE)
_QUOTES = ('"""', "'''", '"', "'")


@dataclass
class Reply:
    """The code blocks of a reply, whether a ```repl fence was left open, and a final answer written in text:
    ``final`` is ``("text", answer)`` or ``("variable", name)``."""

    blocks: list[str] = field(default_factory=list)
    unclosed: bool = False
    final: Optional[tuple[str, str]] = None


def read_reply(text: str) -> Reply:
    """One pass over ``text`` (line endings CRLF, CR or LF)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    reply = Reply()
    prose: list[str] = []
    position = 0
    while True:
        opening = _OPEN.search(text, position)
        if opening is None:
            prose.append(text[position:])
            break
        prose.append(text[position:opening.start()])
        closing = _CLOSE.search(text, opening.end())
        if closing is None:
            reply.unclosed = bool(text[opening.end():].strip())
            break
        body = text[opening.end():closing.start()]
        if body.strip():
            reply.blocks.append(body.rstrip("\n") + "\n")
        position = closing.end()
    match = _FINAL.search("".join(prose))
    if match:
        argument = _unquote(match.group(2).strip())
        reply.final = ("variable", argument.strip()) if match.group(1) == "FINAL_VAR" else ("text", argument)
    return reply


def _unquote(value: str) -> str:
    for quote in _QUOTES:
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote):-len(quote)]
    return value


__all__ = ["Reply", "read_reply"]
