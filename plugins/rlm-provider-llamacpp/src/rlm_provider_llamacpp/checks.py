"""Doctor checks of the plugin: each returns a Readiness and never raises."""

from __future__ import annotations

from rlm_host import Readiness
from rlm_host.llm.protocol import ModelError

from rlm_provider_llamacpp.models import DEFAULT_ALIAS, bundled_path, check_gguf, training_context


def default_model_present() -> Readiness:
    """The embedded default model (``llamacpp:smollm2``) exists and starts like a GGUF file."""
    try:
        path = bundled_path(DEFAULT_ALIAS)
        check_gguf(path)
    except ModelError as exc:
        return Readiness(False, exc.message, exc.hint)
    size_mb = path.stat().st_size / 1e6
    context = training_context(path)
    trained = f", trained context {context}" if context else ""
    return Readiness(True, f"{DEFAULT_ALIAS}: {path} ({size_mb:.0f} MB{trained})")
