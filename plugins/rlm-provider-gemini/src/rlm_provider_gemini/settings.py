"""``[provider.gemini]`` in rlm.toml."""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field


class GeminiSettings(BaseModel):
    """Settings of the ``gemini`` provider; model options given in code (``ModelOptions``) win over them."""

    model_config = ConfigDict(extra="forbid")

    base_url: Optional[str] = Field(
        None,
        description="API endpoint (default: $GOOGLE_GEMINI_BASE_URL, else https://generativelanguage.googleapis.com)",
    )
    api_key_env: Optional[str] = Field(
        None, description="environment variable holding the API key (default: GOOGLE_API_KEY, then GEMINI_API_KEY)"
    )
    api_version: Optional[str] = Field(None, description="API version in the URL, e.g. v1beta (default: the SDK's)")
    max_tokens: Optional[int] = Field(None, ge=1, description="most tokens per answer (default: the model's)")
    temperature: Optional[float] = Field(None, ge=0, le=2, description="sampling temperature (default: the model's)")
    timeout: Optional[float] = Field(None, gt=0, description="seconds per request")
    max_retries: Optional[int] = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: float = Field(60.0, gt=0, description="cap of one wait between retries, seconds")
    context_window: Optional[int] = Field(None, ge=1, description="context window in tokens, when not known")
