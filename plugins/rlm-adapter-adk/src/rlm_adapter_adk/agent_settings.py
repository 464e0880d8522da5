"""``[framework.adk-rlm-agent]``: validated at every settings load, so this module imports pydantic and the
``google-adk`` framework's settings only (its base, whose base ``FrameworkRewards`` holds the event rewards)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from pydantic import Field, field_validator

from rlm_adapter_adk.settings import AdkSettings


class AdkAgentSettings(AdkSettings):
    """The settings of the ``adk-rlm-agent`` framework (seed 003's conversational root agent): the ``google-adk``
    framework's, and what the root agent adds."""

    max_output_chars: int = Field(8000, ge=200, description="characters of a tool's result shown to the model")
    instructions: str = Field("", description="extra instructions appended to the root agent's instruction")
    callbacks: list[str] = Field(
        ["approvals", "metadata"],
        description="the callback bundles on the agents, in order: approvals (always on: the run's approvals before "
                    "each tool call), metadata (tool, context and sub-LM metadata into the trajectory), logging "
                    "(each model and tool call logged at info level), or one a program registered "
                    "(rlm_adapter_adk.bundles.register_callback_bundle)",
    )
    context_root: Optional[Path] = Field(None, description="the folder rlm_load_context reads files from (default: "
                                                           "the working directory); never a home, documents or "
                                                           "system folder unless --allow-any-workdir")
    max_load_bytes: int = Field(50_000_000, ge=1, description="the largest file rlm_load_context loads, in bytes")
    chunk_chars: int = Field(100_000, ge=100, description="characters of a text's chunk in the context metadata")
    context_loader: bool = Field(True, description="offer the context_loader sub-agent (a single-turn agent that "
                                                   "lists the folder and loads files)")
    workflow: bool = Field(True, description="offer the rlm_workflow sub-agent (the adk-rlm loop) as a transfer "
                                             "target")

    @field_validator("callbacks")
    @classmethod
    def _approvals_stay_on(cls, value: list[str]) -> list[str]:
        names = [name.strip() for name in value]
        if "approvals" not in names:
            raise ValueError("the 'approvals' bundle cannot be left out: the run's approvals hold for every tool "
                             "(set them with [run] approve and approval_rules)")
        if len(set(names)) != len(names):
            raise ValueError("a callback bundle is named twice")
        return names
