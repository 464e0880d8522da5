"""The errors a format's extraction raises: a file it cannot read, or one past a limit."""

from __future__ import annotations

from typing import Optional

MB = 1024 * 1024
#: Characters of a library's own message kept in an error (zipfile quotes raw header bytes, for one).
DETAIL_CHARS = 300


class DocumentError(Exception):
    """A file this loader cannot read: ``reason`` says why, ``hint`` what the user can do."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


def corrupt(label: str, exc: object) -> DocumentError:
    """The error for a file that is not a readable ``label`` (damaged, truncated, or another format renamed)."""
    detail = str(exc)
    detail = detail if len(detail) <= DETAIL_CHARS else detail[:DETAIL_CHARS] + "…"
    return DocumentError(f"not a readable {label} file (damaged, truncated, or another format): {detail}",
                         hint=f"open it in an application that reads {label} and save a new copy")


def limit_error(reason: str, setting: Optional[str], section: str = "<name>") -> DocumentError:
    """The error for a file past one of the loader's caps (``setting`` names it, when the user may raise it)."""
    hint = "a file this large is rare and may be hostile"
    if setting:
        hint += f"; if you trust it, raise {setting} in [context_loader.{section}]"
    return DocumentError(reason, hint=hint)
