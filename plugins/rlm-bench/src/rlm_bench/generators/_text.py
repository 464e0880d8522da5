"""Shared building blocks of the long-context generators: seeded randomness, invented names and filler prose.

Everything is deterministic from a seed (``random.Random`` seeded with a string, stable across Python versions
and platforms). Sizes are counted in tokens at the host's ``CHARS_PER_TOKEN`` characters each. Filler text is built
from a fixed pool of neutral sentences that contain no digits and none of the words the generators use for
their needles, so a needle or a fact can never occur by accident.
"""

from __future__ import annotations

import random

from rlm_host.sdk.models import CHARS_PER_TOKEN

_SYLLABLES = (
    "ka", "lo", "mi", "ven", "tor", "sa", "rin", "qua", "del", "mor", "ith", "bel", "zan", "ost", "ru", "fen",
    "gal", "nor", "pe", "wyn", "ash", "cor", "dra", "el", "fi", "gor", "hal", "is", "jor", "lum", "mar", "nev",
)

_SUBJECTS = (
    "The old harbour", "A quiet village", "The northern valley", "Our small team", "The river path", "The library",
    "A travelling merchant", "The morning market", "The research group", "An evening train", "The garden wall",
    "The hill farmers", "A young painter", "The city council", "The school choir", "A patient gardener",
)
_VERBS = (
    "watched", "described", "remembered", "crossed", "repaired", "painted", "visited", "measured", "followed",
    "collected", "studied", "welcomed", "ignored", "celebrated", "questioned", "preserved",
)
_OBJECTS = (
    "the changing seasons", "a long stone bridge", "the patterns of the tide", "an unfinished letter",
    "the colours of the sky", "a box of old maps", "the sound of distant bells", "the edge of the forest",
    "a narrow wooden boat", "the last light of autumn", "a crowded square", "the slow work of the wind",
    "a row of lanterns", "the worn steps of the tower", "a field of tall grass", "the shape of the coastline",
)
_TAILS = (
    "with great care", "before the rain came", "without saying much", "as the day grew warmer",
    "while the others rested", "for reasons nobody wrote down", "in the usual way", "after a long delay",
    "under a grey sky", "to everyone's surprise", "with quiet patience", "as it had for years",
)


def make_rng(seed: int | str, *salt: object) -> random.Random:
    """A ``random.Random`` for one purpose of one case: the same seed and salt always give the same stream."""
    return random.Random(":".join(map(str, (seed, *salt))))


def tokens_to_chars(tokens: int) -> int:
    return int(tokens) * CHARS_PER_TOKEN


def pseudo_word(rng: random.Random, syllables: int | None = None) -> str:
    """An invented word such as ``Kalomir`` (capitalised), so no fact in a context is real-world knowledge."""
    count = syllables or rng.randint(2, 3)
    return "".join(rng.choice(_SYLLABLES) for _ in range(count)).capitalize()


def unique_words(rng: random.Random, count: int, syllables: int | None = None,
                 taken: set[str] | None = None) -> list[str]:
    """``count`` distinct invented words (none in ``taken``, which is updated)."""
    taken = taken if taken is not None else set()
    words: list[str] = []
    while len(words) < count:
        word = pseudo_word(rng, syllables)
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def _sentence_pool(size: int = 1024) -> list[str]:
    rng = make_rng("filler-pool")
    return [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}."
        for _ in range(size)
    ]


_POOL = _sentence_pool()
_AVERAGE = sum(len(s) + 1 for s in _POOL) / len(_POOL)


def filler(rng: random.Random, chars: int, paragraph: int = 6) -> str:
    """Neutral prose of exactly ``chars`` characters: pool sentences, a blank line every ``paragraph`` sentences."""
    if chars <= 0:
        return ""
    count = int(chars / _AVERAGE) + 8
    sentences = rng.choices(_POOL, k=count)
    for index in range(paragraph - 1, count, paragraph):
        sentences[index] += "\n"
    text = " ".join(sentences).replace("\n ", "\n\n")
    while len(text) < chars:  # the estimate fell short: extend
        text += " " + " ".join(rng.choices(_POOL, k=count // 4 + 4))
    return text[:chars]


def insert_at(text: str, needle: str, depth: float) -> tuple[str, int]:
    """``needle`` inserted at a sentence boundary near ``depth`` (0 = start, 1 = end); returns the new text and
    the offset where the needle starts."""
    target = int(len(text) * min(max(depth, 0.0), 1.0))
    if 0 < target < len(text):
        boundary = text.rfind(". ", 0, target)
        target = boundary + 2 if boundary >= 0 else 0
    prefix, suffix = text[:target], text[target:]
    joined = prefix + ("" if not prefix or prefix.endswith((" ", "\n")) else " ") + needle + " "
    return joined + suffix, len(joined) - len(needle) - 1
