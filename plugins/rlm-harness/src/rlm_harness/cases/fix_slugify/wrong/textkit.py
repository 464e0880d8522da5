"""Small text helpers."""


def slugify(text):
    """The text as a URL slug."""
    return "-".join(text.lower().split())
