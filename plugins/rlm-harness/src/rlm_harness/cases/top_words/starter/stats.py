"""Word statistics."""


def top_words(text, n):
    """The n most frequent words of text, as (word, count) pairs."""
    raise NotImplementedError
