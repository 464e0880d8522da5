"""``[provider.<name>]`` for the OpenAI-compatible providers of :mod:`rlm_provider_compatible.services`.

Kept apart from that module because pydantic is not imported while the host registers the providers.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class CompatibleSettings(BaseModel):
    """``[provider.ollama]``, ``[provider.groq]``, …: every value is optional, the service's defaults apply."""

    model_config = ConfigDict(extra="forbid")

    base_url: Optional[str] = Field(None, description="server URL (default: the service's usual one)")
    api_key_env: Optional[str] = Field(None, description="environment variable holding the API key")
    timeout: Optional[float] = Field(None, gt=0, description="seconds per request")
    max_retries: Optional[int] = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: Optional[float] = Field(None, gt=0, description="cap of one wait between retries, seconds")
    context_window: Optional[int] = Field(None, ge=1, description="context window in tokens, when not known")
    max_concurrency: Optional[int] = Field(None, ge=1, description="requests in flight at once (a server's slots)")
