"""``[sink.langsmith]``: key, endpoint and project, each defaulting to the LangSmith SDK's standard variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Optional

from pydantic import ConfigDict, Field, SecretStr

from rlm_host.sdk.observability import ContentSettings

CLOUD = "https://api.smith.langchain.com"
API_KEY_ENV = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
ENDPOINT_ENV = ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
PROJECT_ENV = ("LANGSMITH_PROJECT", "LANGCHAIN_PROJECT")


def _first(env: Mapping[str, str], names: tuple[str, ...]) -> str:
    return next((env[n] for n in names if env.get(n)), "")


class LangSmithSinkSettings(ContentSettings):
    """``[sink.langsmith]`` (or ``RLM_SINK__LANGSMITH__<FIELD>``)."""

    model_config = ConfigDict(extra="forbid")

    api_key: Optional[SecretStr] = Field(None, description="API key (default: LANGSMITH_API_KEY, LANGCHAIN_API_KEY)")
    api_url: Optional[str] = Field(None, description=f"LangSmith API (default: LANGSMITH_ENDPOINT, else {CLOUD})")
    project: Optional[str] = Field(None, description="project the runs go to (default: LANGSMITH_PROJECT, else rlm)")
    timeout: float = Field(2.0, gt=0, description="seconds per request to LangSmith")
    flush_seconds: float = Field(3.0, gt=0, description="how long closing a run waits for delivery")

    def resolved(self, environ: Optional[Mapping[str, str]] = None) -> tuple[str, str, str]:
        """(API key or "", API URL, project)."""
        env = os.environ if environ is None else environ
        key = self.api_key.get_secret_value() if self.api_key else _first(env, API_KEY_ENV)
        url = self.api_url or _first(env, ENDPOINT_ENV) or CLOUD
        return key, url.rstrip("/"), self.project or _first(env, PROJECT_ENV) or "rlm"
