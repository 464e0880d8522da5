"""Spans made safe to show: strings cut, containers cut, nesting cut, so what a view returns is bounded in size and
serialisable whatever a line held (a span nested 900 levels deep decodes, then breaks ``json.dumps`` later)."""

from __future__ import annotations

import json
from itertools import islice
from typing import Any, Optional

from rlm_host.sdk.environments import truncate

#: ``view_spans`` cuts each string value to this many characters.
SPAN_ATTRIBUTE_CHARS = 16_384
#: Containers nested deeper than this are shown as a note.
MAX_DEPTH = 32
#: Items kept per list or object in a capped span.
MAX_ITEMS = 1_000
#: Characters of an id or a name in listings and messages.
SHORT_CHARS = 200
#: Ever smaller cuts tried until a span fits what is left of an answer: (characters per string, items).
_FITS = ((SPAN_ATTRIBUTE_CHARS, MAX_ITEMS), (1_024, 100), (128, 20))


def capped(value: Any, chars: Optional[int] = SPAN_ATTRIBUTE_CHARS, items: int = MAX_ITEMS, depth: int = 0) -> Any:
    """``value`` with strings cut to ``chars`` (None: whole), lists and objects to ``items``, nesting to
    ``MAX_DEPTH``; every cut says so."""
    if isinstance(value, str):
        return truncate(value, chars) if chars is not None and len(value) > chars else value
    if isinstance(value, (dict, list)) and depth >= MAX_DEPTH:
        return f"… nested deeper than {MAX_DEPTH} levels"
    if isinstance(value, dict):
        shown = {str(key)[:SHORT_CHARS]: capped(item, chars, items, depth + 1)
                 for key, item in islice(value.items(), items)}
        if len(value) > items:
            shown["…"] = f"{len(value) - items} more keys"
        return shown
    if isinstance(value, list):
        kept = [capped(item, chars, items, depth + 1) for item in value[:items]]
        return kept + [f"… {len(value) - items} more items"] if len(value) > items else kept
    return value


def shallow(text: str) -> bool:
    """Whether a span's JSON text cannot nest past ``MAX_DEPTH`` (fewer openers than that, strings included)."""
    return text.count("{") + text.count("[") <= MAX_DEPTH


def dumps(span: Any) -> str:
    """The span as JSON text (nesting cut first when it is too deep for ``json``)."""
    try:
        return json.dumps(span, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return json.dumps(capped(span, None), ensure_ascii=False, default=str)


def fitted(span: dict[str, Any], room: int) -> Optional[tuple[dict[str, Any], int]]:
    """The span cut until its JSON fits in ``room`` characters, with that size; None when it never does."""
    for chars, items in _FITS:
        shown = capped(span, chars, items)
        size = len(dumps(shown))
        if size <= room:
            return shown, size
    return None


def short(value: Any) -> Optional[str]:
    """An id, name or code as a short string (None stays None)."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(capped(value, SHORT_CHARS, 10))
    return text if len(text) <= SHORT_CHARS else text[:SHORT_CHARS] + "…"


def status_of(span: dict[str, Any]) -> dict[str, Any]:
    status = span.get("status")
    return status if isinstance(status, dict) else {}


def trace_id_of(span: dict[str, Any]) -> str:
    """The span's trace id as the index keys it."""
    value = span.get("trace_id")
    return value if isinstance(value, str) else str(value)
