"""Readiness of the ``gemini`` provider: whether the SDK is installed, found without importing it."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from rlm_host import Readiness

from rlm_provider_gemini.hooks import INSTALL_HINT

if TYPE_CHECKING:  # pragma: no cover
    from rlm_provider_gemini.settings import GeminiSettings


def sdk_installed(settings: GeminiSettings | None = None) -> Readiness:
    """``google.genai`` can be found (``find_spec`` raises, rather than returning None, when ``google`` is absent).

    Called as ``check(settings)`` with ``[provider.gemini]``, which does not change where the SDK is found."""
    try:
        found = importlib.util.find_spec("google.genai") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return Readiness(False, "missing module: google.genai (the google-genai SDK)", INSTALL_HINT)
    return Readiness(True, "google-genai SDK importable")
