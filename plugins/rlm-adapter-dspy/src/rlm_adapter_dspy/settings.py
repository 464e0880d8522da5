"""``[framework.dspy-rlm]``: the framework's settings, and its readiness check (pydantic only: no dspy import)."""

from __future__ import annotations

from importlib import metadata

from pydantic import ConfigDict, Field
from rlm_host.sdk.frameworks import FrameworkRewards

from rlm_host import Readiness

from rlm_adapter_dspy import INSTALL_HINT

MIN_DSPY = (3, 4)  # dspy.RLM with interpreter_factory and the CodeInterpreter protocol as used here


class DspyRlmSettings(FrameworkRewards):
    """How ``dspy.RLM`` is built for a run. Its ``max_iters`` is the run's ``max_steps`` (root turns) and its
    ``max_llm_calls`` the run's ``max_llm_calls``: those are ``[run]`` settings, not these. The rewards of its events
    (``reward_retry``…) are ``FrameworkRewards`` fields."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(10_000, ge=100, description="characters of a step's output dspy.RLM shows the model")
    verbose: bool = Field(False, description="dspy.RLM logs each iteration's reasoning, code and output")
    json_fallback: bool = Field(
        False,
        description="when dspy cannot parse a root reply, its ChatAdapter asks again for JSON (one more "
        "root call, recorded as a retry step); off: the reply is a malformed_reply step shown to the model",
    )


def readiness(settings: object = None) -> Readiness:
    """dspy installed and recent enough for dspy.RLM (read from its metadata: dspy is not imported)."""
    try:
        version = metadata.version("dspy")
    except metadata.PackageNotFoundError:
        return Readiness(False, "dspy is not installed", INSTALL_HINT)
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < MIN_DSPY:
        return Readiness(False, f"dspy {version} is too old: dspy.RLM needs dspy>=3.4", INSTALL_HINT)
    return Readiness(True, f"dspy {version} (dspy.RLM)")
