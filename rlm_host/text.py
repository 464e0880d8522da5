"""Clipping text for prompts, events and listings: one helper, three documented styles.

- ``"ellipsis"``: the head, ending in ``…`` (listings, one-line summaries; the result is at most ``limit``);
- ``"count"``: the head, then ``… [N more characters]`` (event payloads: the reader learns how much is missing);
- ``"middle"``: head and tail with ``… [N characters cut] …`` between them (REPL output shown to a model, whose
  end often holds the error).

``one_line=True`` first folds every run of white space into one space.
"""

from __future__ import annotations

from typing import Literal, Optional, overload

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


def clip_lines(text: str, max_lines: int) -> str:
    """The first ``max_lines`` lines of ``text``, then ``… (N more lines)``."""
    lines = text.rstrip("\n").splitlines()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    return "\n".join(lines[:max_lines] + [f"… ({len(lines) - max_lines} more lines)"])
