"""Provider names and ``provider:model-prefix`` keys as prices compare them (no pydantic: the plugin host teaches
them aliases while it registers providers, on the fast path of every command)."""

from __future__ import annotations

#: Provider aliases that price keys treat as the provider (``claude:…`` is priced as ``anthropic:…``): each
#: provider's ``aliases``, added by the plugin host as it registers providers (``rlm_host.models.catalog.learn``).
PROVIDER_ALIASES: dict[str, str] = {}
WILDCARD = "*"


def provider_key(name: str) -> str:
    """A provider name as price keys compare it: lower case, ``_`` for ``-``, aliases resolved."""
    key = name.strip().lower().replace("-", "_")
    return PROVIDER_ALIASES.get(key, key)


def parse_key(key: str) -> tuple[str, str]:
    """``"openai:gpt-4o-mini"`` → ``("openai", "gpt-4o-mini")``; ``"vllm:*"`` → ``("vllm", "")``.

    Raises ValueError when ``key`` is not ``provider:model-prefix``.
    """
    provider, sep, prefix = key.strip().partition(":")
    if not sep or not provider.strip() or not prefix.strip():
        raise ValueError(f"{key!r} is not provider:model-prefix (e.g. 'openai:gpt-4o-mini', or 'vllm:*')")
    prefix = prefix.strip().lower()
    return provider_key(provider), "" if prefix == WILDCARD else prefix
