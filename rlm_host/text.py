"""Clipping text for prompts, events and listings: one helper, three documented styles.

- ``"ellipsis"``: the head, ending in ``…`` (listings, one-line summaries; the result is at most ``limit``);
- ``"count"``: the head, then ``… [N more characters]`` (event payloads: the reader learns how much is missing);
- ``"middle"``: head and tail with ``… [N characters cut] …`` between them (REPL output shown to a model, whose
  end often holds the error).

``one_line=True`` first folds every run of white space into one space. ``json_object_spans`` finds the JSON
objects in a model's prose (the generic environment's actions, the framework tool protocol's calls).
"""

from __future__ import annotations

import difflib
import re
from typing import Callable, Iterable, Iterator, Literal, Optional, overload

_SURROGATE = re.compile("[\ud800-\udfff]")

Style = Literal["ellipsis", "count", "middle"]


@overload
def clip(text: str, limit: int, style: Style = "ellipsis", *, one_line: bool = False) -> str: ...
@overload
def clip(text: None, limit: int, style: Style = "ellipsis", *, one_line: bool = False) -> None: ...


def clip(text: Optional[str], limit: int, style: Style = "ellipsis", *, one_line: bool = False) -> Optional[str]:
    """``text`` cut to about ``limit`` characters in the given style (None stays None)."""
    if text is None:
        return None
    if one_line:
        text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if style == "count":
        return text[:limit] + f"… [{len(text) - limit:,} more characters]"
    if style == "middle":
        head = limit * 2 // 3
        tail = limit - head
        return f"{text[:head]}\n… [{len(text) - limit:,} characters cut] …\n{text[-tail:]}"
    return text[: max(limit - 1, 0)] + "…"


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6,
                 show: Callable[[str], str] = repr) -> str:
    """`` (did you mean 'x'?)`` naming the ``n`` choices closest to ``word`` (joined by "or"), or "" when none is
    close: the ending of every "unknown …" message."""
    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)
    return f" (did you mean {' or '.join(map(show, close))}?)" if close else ""


def is_truthy(value: Optional[str]) -> bool:
    """Whether an environment variable's text turns a switch on: 1, true, yes or on (any case)."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def valid_unicode(text: str) -> str:
    """``text`` with every lone UTF-16 surrogate (what a JSON ``"\\ud800"`` decodes to) replaced by U+FFFD, and
    split surrogate pairs joined, so it encodes as UTF-8; text without surrogates comes back as it is."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def terminal_safe(text: str) -> str:
    """``text`` for a terminal: every character that is not printable but newlines and tabs — C0, DEL, C1 (U+0080
    to U+009F: CSI and OSC on many terminals), format and separator characters — shown as ``?`` and ESC as ``␛``,
    never sent: model output or a tool's metadata could otherwise redraw the screen to hide what is really asked.
    Apply it where text is printed (one printer per command), not to each string on its way there."""
    return "".join(c if c in "\n\t" or c.isprintable() else "␛" if c == "\x1b" else "?" for c in text)


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029]")


def json_for_terminal(value: object, indent: int = 2) -> str:
    """``value`` as JSON text whose strings keep their characters, except DEL, the C1 controls (U+0080–U+009F: a
    terminal reads U+009B as CSI) and the line separators, written as ``\\uXXXX`` escapes: the same JSON to a
    parser, nothing a terminal acts on (JSON itself escapes C0)."""
    import json

    text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def clip_lines(text: str, max_lines: int) -> str:
    """The first ``max_lines`` lines of ``text``, then ``… (N more lines)``."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    return "\n".join(lines[:max_lines] + [f"… ({len(lines) - max_lines} more lines)"])


def json_object_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each top-level balanced ``{…}`` in ``text``, strings inside objects respected (a quote in
    the prose around an object does not hide its braces)."""
    depth, start, in_string, escaped = 0, -1, False, False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"' and depth:
            in_string = True
        elif char == "{":
            if depth == 0:
                start = index
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                yield start, index + 1
