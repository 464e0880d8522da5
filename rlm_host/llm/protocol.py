"""The model connector protocol every provider implements.

A provider plugin registers a ``ProviderSpec`` whose factory is called as ``factory(settings, services:
ProviderServices) -> ModelConnector``: ``settings`` is the validated ``[provider.<name>]`` section (or None),
``services.model`` the part after ``provider:`` in the model string and ``services.options`` the run's
connection options.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, Optional, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from rlm_host.errors import ModelError

__all__ = [
    "Completion", "Message", "ModelConnector", "ModelError", "ModelOptions", "Purpose", "RetryCallback", "provider_of",
]  # fmt: skip

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}
#: Why a call is made: a turn of the loop, a sub-call from code, a compaction summary, a last-step synthesis.
Purpose = Literal["turn", "sub_call", "compaction", "synthesis"]
#: ``on_retry(attempt, wait_seconds, reason)``: told before each retry a connector makes.
RetryCallback = Callable[[int, float, str], None]


class ModelOptions(BaseModel):
    """Connection options shared by providers; None means the provider's default."""

    base_url: Optional[str] = None
    api_key: Optional[str] = None
    timeout: float = Field(120.0, gt=0, description="seconds per request")
    max_retries: int = Field(4, ge=0)
    temperature: Optional[float] = None
    max_tokens: Optional[int] = None


class Completion(BaseModel):
    """One model answer. ``text`` is None when the provider returned no content (recorded, never dropped).

    ``model`` is the model that answered; token counts are named as in the OpenTelemetry GenAI conventions.
    """

    text: Optional[str]
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Optional[float] = None
    finish_reason: Optional[str] = None
    seconds: float = 0.0
    raw: dict[str, Any] = Field(default_factory=dict)  # provider details worth keeping (ids, warnings)


@runtime_checkable
class ModelConnector(Protocol):
    """A chat model. ``name`` is the full model string; ``context_window`` in tokens when known.

    A connector may also have a ``base_url`` (str) attribute: prices then apply only to the official endpoint;
    and a ``provider`` (str) attribute: the service as the OpenTelemetry GenAI conventions name it
    (``gen_ai.provider.name``: openai, anthropic, gcp.gemini, x_ai, mistral_ai…), see :func:`provider_of`.

    Optional too: ``reports_cost = True`` when every completion carries its own ``cost`` (a local model's honest
    0.0), so a run with a cost limit knows it can be priced; and ``count_tokens(text) -> int``, the model's
    exact token count, offered only when it is cheap and offline (llama.cpp's tokenizer) — the host uses it
    through :func:`rlm_host.tokens.count_tokens`, which estimates for connectors without it.
    """

    name: str
    context_window: Optional[int]

    def complete(self, messages: list[Message], *, timeout: float | None = None,
                 on_retry: RetryCallback | None = None, purpose: Purpose = "turn") -> Completion:  # fmt: skip
        """Answer ``messages`` within ``timeout`` seconds; raise ModelError when the call fails for good.

        Call ``on_retry`` before each retry of a transient failure (it becomes a ``model_retry`` event).
        ``purpose`` says why the call is made; most connectors ignore it (the replay provider does not).
        """


def provider_of(connector: ModelConnector) -> str:
    """The ``provider`` events name for a connector: its ``provider`` attribute, else its name's part before the
    colon (a provider with no well-known OpenTelemetry name keeps its own, e.g. ``vllm``)."""
    declared = getattr(connector, "provider", None)
    return declared if isinstance(declared, str) and declared else connector.name.partition(":")[0]
