"""``[framework.adk-rlm]``: validated at every settings load, so this module imports pydantic and the
frameworks kit only. The event rewards (``reward_tool_call``…) are the fields of its base, ``FrameworkRewards``."""

from __future__ import annotations

from pydantic import ConfigDict, Field
from rlm_host.sdk.frameworks import FrameworkRewards


class AdkRlmSettings(FrameworkRewards):
    """The settings of the ``adk-rlm`` framework (the RLM loop built of ADK agents)."""

    model_config = ConfigDict(extra="forbid")

    max_output_chars: int = Field(8000, ge=200, description="characters of an iteration's REPL output shown to the "
                                                            "code generator")
    preview_chars: int = Field(200, ge=0, le=2000, description="characters of the context's preview in the "
                                                               "system prompt (0: none)")
    instructions: str = Field("", description="extra instructions appended to the system prompt")
    format_result: bool = Field(False, description="after the loop, one more call rewrites the answer for "
                                                   "presentation (the seeds' result_formatter agent)")
