"""The model connector protocol every provider implements.

A provider plugin registers a ``ProviderSpec`` whose factory is called as
``factory(model: str, options: ModelOptions, settings) -> ModelConnector``, where ``model`` is the part after
``provider:`` in a model string and ``settings`` the validated ``[provider.<name>]`` section (or None).
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from rlm_host.errors import RlmError

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}


class ModelOptions(BaseModel):
    """Connection options shared by providers; None means the provider's default."""

    base_url: Optional[str] = None
    api_key: Optional[str] = None
    timeout: float = Field(120.0, gt=0, description="seconds per request")
    max_retries: int = Field(4, ge=0)
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None


class Completion(BaseModel):
    """One model answer. ``text`` is None when the provider returned no content (recorded, never dropped)."""

    text: Optional[str]
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: Optional[float] = None
    finish_reason: Optional[str] = None
    seconds: float = 0.0
    raw: dict[str, Any] = Field(default_factory=dict)  # provider details worth keeping (ids, warnings)


class ModelError(RlmError):
    """A model call failed after retries (unreachable server, bad key, quota, malformed response)."""


@runtime_checkable
class ModelConnector(Protocol):
    """A chat model. ``name`` is the full model string; ``context_window`` in tokens when known."""

    name: str
    context_window: Optional[int]

    def complete(self, messages: list[Message], *, timeout: float | None = None) -> Completion:
        """Answer ``messages``; raise ModelError when the call fails for good."""
