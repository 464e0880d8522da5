"""``[framework.google-adk]``: validated at every settings load, so this module imports pydantic and the
frameworks kit only. The event rewards (``reward_tool_call``…) are the fields of its base, ``FrameworkRewards``."""

from __future__ import annotations

from pydantic import ConfigDict, Field
from rlm_host.sdk.frameworks import FrameworkRewards


class AdkSettings(FrameworkRewards):
    """The settings of the ``google-adk`` framework."""

    model_config = ConfigDict(extra="forbid")

    output_retries: int = Field(
        3, ge=0, le=50, description="times a malformed or empty reply is sent back to the model (in the whole run) "
                                    "before the run fails"
    )
    max_output_chars: int = Field(8000, ge=200, description="characters of a run_code result shown to the model")
    preview_chars: int = Field(200, ge=0, le=2000, description="characters of the context's preview in the "
                                                               "instructions (0: none)")
    instructions: str = Field("", description="extra instructions appended to the agent's instruction")
