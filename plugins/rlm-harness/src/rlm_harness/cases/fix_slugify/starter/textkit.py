"""Small text helpers."""


def slugify(text):
    """The text as a URL slug."""
    return text.replace(" ", "-")
