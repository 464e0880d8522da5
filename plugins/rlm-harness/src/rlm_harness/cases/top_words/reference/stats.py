"""Word statistics."""

import re
from collections import Counter


def top_words(text, n):
    """The n most frequent words of text, as (word, count) pairs."""
    if n <= 0:
        return []
    counts = Counter(word.lower() for word in re.findall(r"[A-Za-z']+", text))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:n]
