"""Token counts of text: the model's own count when its connector offers one, else an estimate.

The estimate is :data:`CHARS_PER_TOKEN` characters a token, about right for English with the common
tokenizers; it is what sizes are measured in when no tokenizer is at hand. A connector may offer an exact,
cheap, offline ``count_tokens(text) -> int`` (llama.cpp tokenizes with the loaded model); :func:`count_tokens`
uses it where exactness matters (fitting a prompt to the window, deciding when to compact a history).
"""

from __future__ import annotations

from typing import Any

CHARS_PER_TOKEN = 4


def estimate_tokens(text: str | int) -> int:
    """About how many tokens ``text`` is — or a text of that many characters — from its length alone."""
    return (text if isinstance(text, int) else len(text)) // CHARS_PER_TOKEN


def count_tokens(text: str, model: Any = None) -> int:
    """The tokens of ``text`` for ``model`` (a connector, or anything with ``count_tokens``): its own count when
    it has one, else :func:`estimate_tokens`."""
    counter = getattr(model, "count_tokens", None)
    return int(counter(text)) if callable(counter) else estimate_tokens(text)
