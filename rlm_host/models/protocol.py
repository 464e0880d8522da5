"""The model connector protocol every provider implements.

A provider plugin registers a ``ProviderSpec`` whose factory is called as ``factory(settings, services:
ProviderServices) -> ModelConnector``: ``settings`` is the validated ``[provider.<name>]`` section (or None),
``services.model`` the part after ``provider:`` in the model string and ``services.options`` the run's
connection options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Optional, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from rlm_host.errors import ModelError

__all__ = [
    "Completion", "Message", "ModelConnector", "ModelError", "ModelOptions", "Purpose", "ReplyFormat",
    "ReplyFormatMode", "RetryCallback", "merge_same_role", "provider_of", "reply_format_for",
]

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": "..."}
#: Why a call is made: a turn of the loop, a sub-call from code, a compaction summary, a last-step synthesis.
Purpose = Literal["turn", "sub_call", "compaction", "synthesis"]
#: ``on_retry(attempt, wait_seconds, reason)``: told before each retry a connector makes.
RetryCallback = Callable[[int, float, str], None]
#: When a root turn's reply format is enforced (``[run] reply_format``): ``auto`` where the connector enforces by
#: default (local llama.cpp models), ``on`` wherever the connector can, ``off`` never.
ReplyFormatMode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class ReplyFormat:
    """The shape an environment's replies must have, for connectors that can enforce it while the model writes
    (constrained decoding), so that even a small model answers in a form the environment can act on.

    ``gbnf`` is a llama.cpp GBNF grammar (its start rule is ``root``); ``json_schema`` a JSON schema of the reply
    when it is one JSON value. An environment gives one or both; a connector enforces the kind it supports.
    """

    name: str
    gbnf: Optional[str] = None
    json_schema: Optional[Mapping[str, Any]] = field(default=None, hash=False)

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds this format comes in: ``gbnf``, ``json_schema``."""
        return frozenset(kind for kind in ("gbnf", "json_schema") if getattr(self, kind) is not None)


class ModelOptions(BaseModel):
    """Connection options shared by providers; None means the provider's default."""

    base_url: Optional[str] = None
    api_key: Optional[str] = None
    timeout: float = Field(120.0, gt=0, description="seconds per request")
    max_retries: int = Field(4, ge=0)
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    seed: Optional[int] = None
    max_tokens: Optional[int] = None

    def sampling(self) -> dict[str, Any]:
        """The sampling options that are set (``temperature``, ``top_p``, ``seed``): what a request should carry."""
        return {name: getattr(self, name) for name in SAMPLING_OPTIONS if getattr(self, name) is not None}


#: The sampling options a run may set for its model calls (``[run] temperature``…) and a provider may honour.
SAMPLING_OPTIONS = ("temperature", "top_p", "seed")


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

    ``warm_up()``, optional: start preparing for the first call (importing an SDK) without blocking; the runner
    calls it when a run starts.
    ``max_concurrency`` (int or None): how many calls it takes at once; ``llm_query_batched`` runs a whole batch
    together up to that (an in-process model says 1; an HTTP server's slots come from ``[provider.X]``).

    A connector that can enforce a :class:`ReplyFormat` says which kinds in ``reply_formats`` (a frozenset of
    ``"gbnf"`` / ``"json_schema"``; absent means none) and, with ``reply_format_by_default = True``, that it
    enforces one unless the run says ``reply_format = "off"`` (local llama.cpp models); see
    :func:`reply_format_for`.
    """

    name: str
    context_window: Optional[int]

    def complete(self, messages: list[Message], *, timeout: float | None = None,
                 on_retry: RetryCallback | None = None, purpose: Purpose = "turn",
                 reply_format: ReplyFormat | None = None) -> Completion:
        """Answer ``messages`` within ``timeout`` seconds; raise ModelError when the call fails for good.

        Call ``on_retry`` before each retry of a transient failure (it becomes a ``model_retry`` event).
        ``purpose`` says why the call is made; most connectors ignore it (the replay provider does not).
        ``reply_format``, given only to a connector declaring ``reply_formats``, is the shape the answer must have:
        enforce it (and say so in ``Completion.raw["reply_format"]``); connectors that cannot accept and ignore it.
        """


def merge_same_role(messages: list[Message]) -> list[Message]:
    """``messages`` with each run of one role joined into one message (texts apart by a blank line): many chat
    APIs and templates refuse two user (or assistant) turns in a row. New dicts; the input is left as it is."""
    out: list[Message] = []
    for message in messages:
        if out and out[-1]["role"] == message["role"]:
            out[-1]["content"] += "\n\n" + message["content"]
        else:
            out.append(dict(message))
    return out


def provider_of(connector: ModelConnector) -> str:
    """The ``provider`` events name for a connector: its ``provider`` attribute, else its name's part before the
    colon (a provider with no well-known OpenTelemetry name keeps its own, e.g. ``vllm``)."""
    declared = getattr(connector, "provider", None)
    return declared if isinstance(declared, str) and declared else connector.name.partition(":")[0]


def reply_format_for(connector: Any, reply_format: Optional[ReplyFormat],
                     mode: ReplyFormatMode) -> Optional[ReplyFormat]:
    """The reply format to hand ``connector`` for a root turn under ``mode``, or None: never with ``off``, only
    where the connector enforces by default with ``auto``, and only when it supports one of the format's kinds."""
    if reply_format is None or mode == "off":
        return None
    if mode == "auto" and not getattr(connector, "reply_format_by_default", False):
        return None
    supported: frozenset[str] = getattr(connector, "reply_formats", frozenset())
    return reply_format if reply_format.kinds & supported else None
