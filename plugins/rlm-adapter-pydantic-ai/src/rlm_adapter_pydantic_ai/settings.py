"""``[framework.pydantic-ai]``: validated at every settings load, so this module imports pydantic and the
frameworks kit only. The event rewards (``reward_tool_call``…) are the fields of its base, ``FrameworkRewards``."""

from __future__ import annotations

from typing import Optional

from pydantic import ConfigDict, Field
from rlm_host.sdk.frameworks import FrameworkRewards


class PydanticAISettings(FrameworkRewards):
    """The settings of the ``pydantic-ai`` framework."""

    model_config = ConfigDict(extra="forbid")

    retries: int = Field(3, ge=0, le=50, description="times pydantic-ai lets the model retry a rejected tool call "
                                                     "(unknown tool, bad arguments) before the run fails")
    output_retries: Optional[int] = Field(
        None, ge=0, le=50, description="retries of a rejected answer (an empty or malformed reply) in the whole run; "
                                       "default: `retries`"
    )
    max_output_chars: int = Field(8000, ge=200, description="characters of a run_code result shown to the model")
    preview_chars: int = Field(200, ge=0, le=2000, description="characters of the context's preview in the "
                                                               "system prompt (0: none)")
    instructions: str = Field("", description="extra instructions appended to the agent's system prompt")
