"""Word statistics."""

from collections import Counter


def top_words(text, n):
    """The n most frequent words of text, as (word, count) pairs."""
    return Counter(text.split()).most_common(n)
