"""``[sink.logfire]``: the write token (default ``LOGFIRE_TOKEN``), the server and the service name."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from pydantic import ConfigDict, Field, SecretStr

from rlm_host.sdk.observability import ContentSettings

TOKEN_ENV = "LOGFIRE_TOKEN"
BASE_URL_ENV = "LOGFIRE_BASE_URL"


class LogfireSinkSettings(ContentSettings):
    """``[sink.logfire]`` (or ``RLM_SINK__LOGFIRE__<FIELD>``)."""

    model_config = ConfigDict(extra="forbid")

    token: Optional[SecretStr] = Field(None, description=f"project write token (default: {TOKEN_ENV})")
    base_url: Optional[str] = Field(None, description=f"Logfire server (default: {BASE_URL_ENV}, else the region "
                                    "the token names, as the SDK derives it)")
    service_name: str = Field("rlm", description="the spans' service.name")
    environment: Optional[str] = Field(None, description="deployment environment shown by Logfire")
    flush_seconds: float = Field(2.0, gt=0, description="how long closing a run waits for delivery")

    def resolved_token(self, environ: Optional[Mapping[str, str]] = None) -> str:
        env = os.environ if environ is None else environ
        return self.token.get_secret_value() if self.token else env.get(TOKEN_ENV, "")

    def resolved_base_url(self, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
        env = os.environ if environ is None else environ
        base = self.base_url or env.get(BASE_URL_ENV) or None
        return base.rstrip("/") if base else None
