"""The models kit: for provider plugins (``rlm_register_providers``, a ``ProviderSpec`` whose factory returns a
``ModelConnector``).

A connector implements the ``ModelConnector`` protocol: ``complete(messages, *, timeout, on_retry, purpose,
reply_format) -> Completion`` (its connection options come from ``ProviderServices`` at creation). A
connector over a vendor SDK subclasses ``RetryingConnector`` (retries with ``RetryPolicy``, ``Failure`` and
``retry_after_of``; ``MalformedBody`` for a reply it cannot read) and reads its settings with
``validate_settings``; one over ``httpx`` reads each answer with ``json_body`` (``StatusError`` for a non-2xx one)
and keeps the base's ``classify``; token counts fall back to ``estimate_tokens``. ``resolve_connector`` /
``auto_model`` turn a model string into a ready connector, as a run does. Errors are the root's (``ModelError``,
``ConfigError``).

Reference plugins to copy: ``plugins/rlm-provider-anthropic`` (an SDK-based connector on ``RetryingConnector``),
``plugins/rlm-provider-llamacpp`` (an HTTP server it can start, reply formats as grammars). Contract suite:
``rlm_host.testing.ProviderContract``.
"""

from rlm_host.models.connector_base import (MalformedBody, RetryingConnector, StatusError, context_window_of, json_body,
                                            reject_raw_text, retry_after_of, token_count, validate_settings)
from rlm_host.models.protocol import (Completion, Message, ModelConnector, ModelOptions, Purpose, ReplyFormat,
                                   ReplyFormatMode, RetryCallback, merge_same_role)
from rlm_host.models.catalog import context_window as listed_context_window
from rlm_host.models.openai_provider import OPENAI_STYLE, OpenAIConnector, ReplyFormatFields
from rlm_host.models.openai_provider import ProviderSettings as OpenAISettings
from rlm_host.models.prices import PriceTable
from rlm_host.models.resolve import auto_model, resolve_connector, split_model_string
from rlm_host.models.retry import Failure, RetryPolicy, is_retryable_status, status_text
from rlm_host.tokens import CHARS_PER_TOKEN, count_tokens, estimate_tokens

__all__ = [
    # the connector protocol
    "ModelConnector", "Completion", "Message", "ModelOptions", "Purpose", "ReplyFormat", "ReplyFormatMode",
    "RetryCallback",
    # consecutive messages of one role joined, for APIs and templates that want the roles to alternate
    "merge_same_role",
    # retries
    "RetryPolicy", "Failure", "is_retryable_status", "status_text",
    # the base of SDK-based connectors
    "RetryingConnector", "MalformedBody", "validate_settings", "context_window_of", "token_count",
    "reject_raw_text", "retry_after_of", "json_body", "StatusError",
    # token counts: the model's own (a connector's optional ``count_tokens``), else the estimate
    "CHARS_PER_TOKEN", "count_tokens", "estimate_tokens",
    # what a model costs (USD per 1M tokens: [[prices]], genai-prices, the providers' own); a model string's parts
    "PriceTable", "split_model_string",
    # a model string to a connector, as a run resolves it
    "resolve_connector", "auto_model",
    # the openai connector, for OpenAI-compatible services (rlm-provider-compatible): its settings, where a
    # service takes a reply format, and a model's context window as genai-prices lists it (by price id)
    "OpenAIConnector", "OpenAISettings", "ReplyFormatFields", "OPENAI_STYLE", "listed_context_window",
]
