"""Helpers every environment needs: the context description as prompt text, the final answer as text, and the
middle-cut of long output (``rlm_host.text.clip``)."""

from __future__ import annotations

import json
from typing import Any

from rlm_host.results import FinalSignal
from rlm_host.text import clip


def truncate(text: str, limit: int) -> str:
    """Head and tail of ``text`` with a marker saying how much was cut from the middle."""
    return clip(text, limit, "middle")


def answer_text(final: FinalSignal) -> str:
    """The final answer as a string: text as is, anything else as JSON (SUBMIT's single ``answer`` unwrapped)."""
    value: Any = final.value
    if final.kind == "submit" and isinstance(value, dict) and list(value) == ["answer"]:
        value = value["answer"]
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def with_preview(meta: dict[str, Any], preview_chars: int) -> dict[str, Any]:
    """The run's context description with its preview cut to ``preview_chars``."""
    if "preview" not in meta:
        return meta
    return {**meta, "preview": meta["preview"][:preview_chars]}


def render_description(meta: dict[str, Any]) -> str:
    """The metadata as a few lines of text for the first user message."""
    kind = meta["type"]
    if kind == "none":
        return "nothing (context is None): answer from the query alone, using llm_query if useful."
    if kind == "path":
        return f"the file {meta['path']} ({meta['bytes']:,} bytes), read by the environment, not loaded"
    lines = []
    if kind == "str":
        lines.append(f"a string of {meta['total_chars']:,} characters")
    elif kind == "list":
        lengths = meta["document_lengths"]
        more = ", …" if meta["documents"] > len(lengths) else ""
        lines.append(f"a list of {meta['documents']:,} documents, {meta['total_chars']:,} characters in total")
        lines.append("document lengths: [" + ", ".join(f"{n:,}" for n in lengths) + more + "]")
    else:
        lines.append(f"a JSON {kind} of {meta['total_chars']:,} characters when serialised")
        if "keys" in meta:
            more = ", …" if meta["key_count"] > len(meta["keys"]) else ""
            lines.append(f"{meta['key_count']:,} keys: {', '.join(meta['keys'])}{more}")
    lines.append(f"preview of the start: {meta.get('preview', '')!r}")
    return "\n".join(lines)


