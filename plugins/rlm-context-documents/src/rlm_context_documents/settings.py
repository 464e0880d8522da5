"""``[context_loader.<name>]`` settings, the same for every loader of this plugin."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DocumentSettings(BaseModel):
    """``cache``: keep what a file gave under ``<home>/cache/documents`` (keyed by its content hash);
    ``cache_max_mb``: the oldest entries go when the folder grows past this."""

    model_config = ConfigDict(extra="forbid")

    cache: bool = True
    cache_max_mb: int = Field(default=1024, ge=1)
