"""``[environment.rlms]``: what an ``RLM(...)`` of the authors' shape sets for its loop (and a user may set in
``rlm.toml`` for ``rlm run --env rlms``)."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class RlmsLoopSettings(BaseModel):
    """The loop's prompt, finishing rules and concurrency."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: Optional[str] = Field(None, description="replaces the system prompt (RLM(custom_system_prompt=)); "
                                         "{custom_tools_section} in it is filled as rlms fills it")
    orchestrator: bool = Field(True, description="add the orchestration advice to the system prompt")
    user_prologue: Optional[str] = Field(None, description="a user message after the context's description")
    max_errors: Optional[int] = Field(None, ge=1, description="stop after this many iterations in a row whose code "
                                      "failed (RLM(max_errors=))")
    compaction: bool = Field(False, description="fold older turns into a summary near the root model's window")
    compaction_threshold: float = Field(0.85, gt=0, le=1, description="share of the window that starts compaction")
    context_window: int = Field(128_000, ge=1024, description="root model's window, tokens, when its connector "
                                "does not know it (rlms' default)")
    max_concurrent_subcalls: int = Field(4, ge=1, le=256, description="child runs of rlm_query_batched at once")
    batch_concurrency: int = Field(32, ge=1, le=256, description="llm_query_batched calls in flight at once")
    max_output_chars: int = Field(20_000, ge=200, description="REPL output fed back per block (head + tail)")


__all__ = ["RlmsLoopSettings"]
