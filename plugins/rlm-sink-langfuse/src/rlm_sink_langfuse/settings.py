"""``[sink.langfuse]``: keys and endpoint, each defaulting to the Langfuse SDK's standard variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from pydantic import ConfigDict, Field, SecretStr

from rlm_host.sdk.observability import ContentSettings

CLOUD = "https://cloud.langfuse.com"
PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"
BASE_URL_ENV = ("LANGFUSE_BASE_URL", "LANGFUSE_HOST")


class LangfuseSinkSettings(ContentSettings):
    """``[sink.langfuse]`` (or ``RLM_SINK__LANGFUSE__<FIELD>``)."""

    model_config = ConfigDict(extra="forbid")

    public_key: Optional[str] = Field(None, description=f"project public key (default: {PUBLIC_KEY_ENV})")
    secret_key: Optional[SecretStr] = Field(None, description=f"project secret key (default: {SECRET_KEY_ENV})")
    base_url: Optional[str] = Field(None, description="Langfuse server (default: LANGFUSE_BASE_URL, LANGFUSE_HOST, "
                                    f"else {CLOUD})")
    environment: Optional[str] = Field(None, description="Langfuse environment (default: the SDK's, "
                                       "LANGFUSE_TRACING_ENVIRONMENT)")
    service_name: str = Field("rlm", description="the spans' service.name")
    timeout: float = Field(2.0, gt=0, description="seconds per request to Langfuse")
    flush_seconds: float = Field(3.0, gt=0, description="how long closing a run waits for delivery")

    def resolved(self, environ: Optional[Mapping[str, str]] = None) -> tuple[str, str, str]:
        """(public key, secret key, base URL), from the settings, else the SDK's variables ("" when missing)."""
        env = os.environ if environ is None else environ
        public = self.public_key or env.get(PUBLIC_KEY_ENV, "")
        secret = self.secret_key.get_secret_value() if self.secret_key else env.get(SECRET_KEY_ENV, "")
        base = self.base_url or next((env[n] for n in BASE_URL_ENV if env.get(n)), CLOUD)
        return public, secret, base.rstrip("/")

    def missing(self, environ: Optional[Mapping[str, str]] = None) -> list[str]:
        """The names of the credential variables still needed (never values)."""
        public, secret, _ = self.resolved(environ)
        return [name for name, value in ((PUBLIC_KEY_ENV, public), (SECRET_KEY_ENV, secret)) if not value]
