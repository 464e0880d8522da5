"""S-NIAH: one needle in a haystack of neutral prose, at a chosen depth.

The needle reads ``The special magic number for <key> is <value>.``; the value is a 7-digit number derived
from the seed and the key, and the filler never contains digits or the word "magic", so the context holds the
needle exactly once. ``tokens`` sets the size (≈4 characters a token), ``depth`` where the needle sits
(0 = start, 1 = end).
"""

from __future__ import annotations

from rlm_bench.generators import Generated
from rlm_bench.generators._text import filler, insert_at, make_rng, tokens_to_chars

NEEDLE = "The special magic number for {key} is {value}."
QUESTION = "What is the special magic number for {key} mentioned in the text? Answer with the number only."


def needle_value(seed: int | str, key: str) -> str:
    """The needle's value, from the seed and key alone (no context needs to be built to know the answer)."""
    return str(make_rng(seed, "niah-value", key).randint(1_000_000, 9_999_999))


def generate(tokens: int = 8192, depth: float = 0.5, seed: int | str = 0, key: str = "the Harbor archive") -> Generated:
    if tokens < 64:
        raise ValueError("tokens must be at least 64")
    if not 0.0 <= float(depth) <= 1.0:
        raise ValueError("depth must be between 0 and 1")
    value = needle_value(seed, key)
    needle = NEEDLE.format(key=key, value=value)
    body = filler(make_rng(seed, "niah-filler"), tokens_to_chars(tokens) - len(needle) - 2)
    context, offset = insert_at(body, needle, float(depth))
    return Generated(
        context=context,
        answer=value,
        question=QUESTION.format(key=key),
        scorer="contains",
        meta={"chars": len(context), "needle_offset": offset, "needle": needle, "depth": float(depth)},
    )
