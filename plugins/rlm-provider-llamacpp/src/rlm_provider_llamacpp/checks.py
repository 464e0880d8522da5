"""Doctor checks of the plugin: each returns a Readiness and never raises."""

from __future__ import annotations

from typing import Any

from rlm_host import ModelError, Readiness

from rlm_provider_llamacpp.hooks import DEFAULT_MODEL
from rlm_provider_llamacpp.models import bundled_path, check_gguf, training_context


def default_model_present(settings: Any = None) -> Readiness:
    """The embedded default model (``llamacpp:smollm2``) exists and starts like a GGUF file.

    Called as ``check(settings)`` with the whole configuration, which does not change where that file is."""
    try:
        path = bundled_path(DEFAULT_MODEL)
        check_gguf(path)
    except ModelError as exc:
        return Readiness(False, exc.message, exc.hint)
    size_mb = path.stat().st_size / 1e6
    context = training_context(path)
    trained = f", trained context {context}" if context else ""
    return Readiness(True, f"{DEFAULT_MODEL}: {path} ({size_mb:.0f} MB{trained})")
