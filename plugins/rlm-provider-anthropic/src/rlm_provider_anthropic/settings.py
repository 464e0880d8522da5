"""``[provider.anthropic]`` in rlm.toml.

There is no ``temperature``: the Messages API of the anthropic SDK this plugin is built on (2.x) takes none.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_MAX_TOKENS = 4096


class AnthropicSettings(BaseModel):
    """Settings of the ``anthropic`` provider; model options given in code (``ModelOptions``) win over them."""

    model_config = ConfigDict(extra="forbid")

    base_url: Optional[str] = Field(
        None, description="API endpoint (default: $ANTHROPIC_BASE_URL, else https://api.anthropic.com)"
    )
    api_key_env: str = Field("ANTHROPIC_API_KEY", description="environment variable holding the API key")
    max_tokens: int = Field(
        DEFAULT_MAX_TOKENS, ge=1, description="most tokens per answer (the Messages API requires a limit)"
    )
    timeout: Optional[float] = Field(None, gt=0, description="seconds per request")
    max_retries: Optional[int] = Field(None, ge=0, description="retries after a failed request")
    max_retry_wait: float = Field(60.0, gt=0, description="cap of one wait between retries, seconds")
    context_window: Optional[int] = Field(None, ge=1, description="context window in tokens, when not known")
