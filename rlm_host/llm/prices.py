"""Model prices: USD per million input (prompt) and output (completion) tokens, to give usage a cost.

A provider that knows what a call cost puts it in ``Completion.cost``; when it does not (``cost`` is None), the
engine asks a :class:`PriceTable` (see ``rlm_host.engine.model_client.ModelClient``). Prices are keyed by provider
and model-name prefix, and the longest matching prefix wins: ``openai:gpt-4o-mini-2024-07-18`` is priced as
``gpt-4o-mini``, not ``gpt-4o``. A prefix matches at a name boundary only (see :func:`matches`), so a newer
model (``gpt-5.4``) is not silently priced as an older one (``gpt-5``). Local and test providers (llama.cpp,
scripted, replay and the local OpenAI-compatible servers) cost nothing. A model that matches nothing has no
price: its cost stays unknown (None), never a guess.

The built-in table is a snapshot of public list prices (standard tier, no caching or batch discounts; Gemini
2.5 Pro at its ≤200k-token and Claude Haiku 5.5 at its ≤100k-token prompt rate). It applies only to a
provider's official endpoint: ``openai:gpt-4o`` served by some other ``--base-url`` is not OpenAI's bill.
Prices change; override or add entries in the config::

    [[prices]]
    model = "openai:gpt-4o-mini"     # provider:model-prefix ("provider:*" matches every model)
    input = 0.15                     # USD per 1M input tokens
    output = 0.60                    # USD per 1M output tokens

Overrides join the table (replacing an entry with the same key) and apply to every endpoint, so a price for
a model served through a proxy or a local server can be given too. This module imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Optional
from urllib.parse import urlsplit

from rlm_host.config.schema import parse_key, provider_key

PER_TOKENS = 1_000_000
SEPARATORS = "-._:/@"


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The cost of one call, USD."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / PER_TOKENS


FREE = Price(0.0, 0.0)

#: List prices by provider, then model-name prefix.
BUILTIN_PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-3.5-turbo": Price(0.50, 1.50),
        "gpt-4": Price(30.00, 60.00),
        "gpt-4-turbo": Price(10.00, 30.00),
        "gpt-4o": Price(2.50, 10.00),
        "gpt-4o-mini": Price(0.15, 0.60),
        "gpt-4.1": Price(2.00, 8.00),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-5": Price(1.25, 10.00),
        "gpt-5-mini": Price(0.25, 2.00),
        "gpt-5-nano": Price(0.05, 0.40),
        "o1": Price(15.00, 60.00),
        "o1-mini": Price(1.10, 4.40),
        "o1-pro": Price(150.00, 600.00),
        "o3": Price(2.00, 8.00),
        "o3-pro": Price(20.00, 80.00),
        "o3-mini": Price(1.10, 4.40),
        "o4-mini": Price(1.10, 4.40),
    },
    "anthropic": {
        "claude-3-haiku": Price(0.25, 1.25),
        "claude-3-5-haiku": Price(0.80, 4.00),
        "claude-haiku-4": Price(1.00, 5.00),
        "claude-haiku-5-5": Price(0.10, 0.50),  # prompts up to 100k tokens
        "claude-3-5-sonnet": Price(3.00, 15.00),
        "claude-3-7-sonnet": Price(3.00, 15.00),
        "claude-sonnet-4": Price(3.00, 15.00),
        "claude-sonnet-5": Price(2.00, 10.00),
        "claude-3-opus": Price(15.00, 75.00),
        "claude-opus-4": Price(15.00, 75.00),
        "claude-opus-4-5": Price(5.00, 25.00),
        "claude-opus-4-6": Price(5.00, 25.00),
        "claude-opus-4-7": Price(5.00, 25.00),
        "claude-opus-4-8": Price(5.00, 25.00),
        "claude-opus-5": Price(5.00, 25.00),
        "claude-opus-5-5": Price(4.00, 20.00),
        "claude-fable-5": Price(10.00, 50.00),
        "claude-mythos-5": Price(10.00, 50.00),
    },
    "gemini": {
        "gemini-1.5-flash": Price(0.075, 0.30),
        "gemini-1.5-pro": Price(1.25, 5.00),
        "gemini-2.0-flash": Price(0.10, 0.40),
        "gemini-2.0-flash-lite": Price(0.075, 0.30),
        "gemini-2.5-flash": Price(0.30, 2.50),
        "gemini-2.5-flash-lite": Price(0.10, 0.40),
        "gemini-2.5-pro": Price(1.25, 10.00),
        "gemini-3.8-flash": Price(0.75, 3.75),
    },
}

#: Where each priced provider's official API lives: the built-in prices apply only there (or to no base URL).
OFFICIAL_HOSTS = {
    "openai": "api.openai.com",
    "anthropic": "api.anthropic.com",
    "gemini": "generativelanguage.googleapis.com",
}

#: Built-in providers that never cost money (scripts, replays). A plugin's free model says so itself: its
#: completions carry ``cost=0.0``.
FREE_PROVIDERS = frozenset({"scripted", "replay"})


def free_providers() -> frozenset[str]:
    """The free providers, the local OpenAI-compatible servers (ollama, vllm, …) included."""
    from rlm_host.llm.openai_compatible import local_provider_names

    return FREE_PROVIDERS | frozenset(local_provider_names())


def _official(provider: str, base_url: Optional[str]) -> bool:
    """True when ``base_url`` is absent or the provider's official API host."""
    if not base_url:
        return True
    host = OFFICIAL_HOSTS.get(provider)
    return host is not None and (urlsplit(base_url).hostname or "").lower() == host


def matches(prefix: str, name: str) -> bool:
    """Whether a price entry's ``prefix`` covers model ``name``: the same name, or the name followed by a
    separator (``gpt-4o`` covers ``gpt-4o-2024-08-06`` but not ``gpt-4o1``; ``gpt-5`` does not cover
    ``gpt-5.4``, a different model). A prefix that ends with a separator, or is empty, covers any continuation."""
    if not name.startswith(prefix):
        return False
    return len(name) == len(prefix) or not prefix or prefix[-1] in SEPARATORS or name[len(prefix)] in "-:@/"


def _longest(table: Mapping[str, Price], names: Iterable[str]) -> tuple[int, Optional[Price]]:
    """The entry with the longest prefix covering any of ``names``, as (prefix length, price); (-1, None)."""
    best: tuple[int, Optional[Price]] = (-1, None)
    for prefix, price in table.items():
        if len(prefix) > best[0] and any(matches(prefix, name) for name in names):
            best = (len(prefix), price)
    return best


class PriceTable:
    """The built-in prices plus overrides; ``lookup`` and ``cost`` answer per model string."""

    def __init__(self, overrides: Mapping[str, Any] | Iterable[Any] = ()) -> None:
        self.overrides: dict[str, dict[str, Price]] = {}
        items = overrides.items() if isinstance(overrides, Mapping) else ((_key(e), e) for e in overrides)
        for key, value in items:
            provider, prefix = parse_key(key)
            self.overrides.setdefault(provider, {})[prefix] = _price(value)

    @classmethod
    def from_settings(cls, settings: Any) -> "PriceTable":
        """The table for the validated settings (``settings.prices``, a list of PriceSettings)."""
        return cls(getattr(settings, "prices", None) or ())

    def lookup(self, model: str, *, base_url: Optional[str] = None) -> Optional[Price]:
        """The price of ``provider:model`` (served from ``base_url``, when known); None when unknown."""
        provider, sep, name = model.partition(":")
        if not sep or not name:
            return None
        provider = provider_key(provider)
        lowered = name.strip().lower()
        names = (lowered, lowered.rsplit("/", 1)[-1])  # "models/gemini-2.5-pro" is priced as "gemini-2.5-pro"
        length, price = _longest(self.overrides.get(provider, {}), names)
        if _official(provider, base_url):
            builtin_length, builtin = _longest(BUILTIN_PRICES.get(provider, {}), names)
            if builtin_length > length:
                price = builtin
        if price is None and provider in free_providers():
            return FREE
        return price

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int, *,
             base_url: Optional[str] = None) -> Optional[float]:  # fmt: skip
        """The cost of one call in USD, or None when the model's price is unknown."""
        price = self.lookup(model, base_url=base_url)
        return None if price is None else price.cost(prompt_tokens, completion_tokens)


def _key(entry: Any) -> str:
    return str(entry["model"] if isinstance(entry, Mapping) else getattr(entry, "model"))


def _price(value: Any) -> Price:
    if isinstance(value, Price):
        return value
    if isinstance(value, Mapping):
        return Price(float(value["input"]), float(value["output"]))
    return Price(float(getattr(value, "input")), float(getattr(value, "output")))


_DEFAULT: Optional[PriceTable] = None


def default_table() -> PriceTable:
    """The built-in prices without overrides (shared, created on first use)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = PriceTable()
    return _DEFAULT


__all__ = [
    "BUILTIN_PRICES",
    "FREE",
    "FREE_PROVIDERS",
    "Price",
    "PriceTable",
    "default_table",
    "free_providers",
    "matches",
    "parse_key",
]
