"""The child-process side of a load: run a format's ``extract`` under the output caps and answer with JSON data.

``extract_file`` is what ``rlm_host.bounded.run_bounded`` calls in the child. It counts parts and characters as
they come (a file past ``max_parts``, ``max_part_chars`` or ``max_chars`` stops there) and turns every way a
parser can fail — a ``DocumentError``, an ``OSError``, lxml's ``XMLSyntaxError``, a ``RecursionError``, any other
exception of a library meeting bytes it did not expect — into ``{"error": {"reason", "hint"}}``. A
``MemoryError`` is left to the bounded runner, which reports the memory limit.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from rlm_context_documents.errors import DocumentError, corrupt, limit_error
from rlm_context_documents.settings import DocumentSettings


def extract_file(loader_ref: str, path: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``{"parts": [[part, text], …], "warnings": […]}`` or ``{"error": {…}}`` for the file at ``path``."""
    module, _, name = loader_ref.partition(":")
    loader = getattr(importlib.import_module(module), name)(DocumentSettings(**settings))
    caps = loader.settings
    parts: list[list[str]] = []
    try:
        for part, text in loader.extract(Path(path)):
            if len(parts) >= caps.max_parts:
                raise limit_error(f"the file has more than max_parts = {caps.max_parts:,} {loader.part_label}s",
                                  "max_parts", loader.name)
            loader.check_part(len(text))
            loader.taken += len(text)
            parts.append([part, text])
    except DocumentError as exc:
        return {"error": {"reason": exc.reason, "hint": exc.hint}}
    except MemoryError:
        raise
    except OSError as exc:
        if not Path(path).is_file() or type(exc) in (PermissionError, FileNotFoundError, IsADirectoryError):
            return {"error": {"reason": exc.strerror or str(exc), "io": True}}
        return _corrupt(loader.label, exc)
    except RecursionError:
        return _corrupt(loader.label, "its structure is nested too deeply")
    except Exception as exc:  # noqa: BLE001 - a library's own error on bytes it did not expect
        return _corrupt(loader.label, exc)
    return {"parts": parts, "warnings": loader.warnings}


def _corrupt(label: str, exc: object) -> dict[str, Any]:
    error = corrupt(label, f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else exc)
    return {"error": {"reason": error.reason, "hint": error.hint}}
