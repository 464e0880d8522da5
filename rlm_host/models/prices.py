"""Model prices: what one call cost in USD, for usage its provider did not price.

A provider that knows what a call cost puts it in ``Completion.cost``; when it does not (``cost`` is None), the
engine asks a :class:`PriceTable` (see ``rlm_host.engine.model_client.ModelClient``). Where a price comes from:

- the user's ``[[prices]]`` entries, keyed by provider and model-name prefix (the longest matching prefix wins;
  a prefix matches at a name boundary only, see :func:`matches`, so ``gpt-5`` does not price ``gpt-5.4``);
- the ``genai-prices`` package (:mod:`rlm_host.models.catalog`): list prices of the hosted providers, tiers
  included (a 300k-token Claude Sonnet 4.5 prompt pays $6, not $3, per million), applied only at the
  provider's own API: ``openai:gpt-4o`` served by some other ``--base-url`` is not OpenAI's bill;
- the few models genai-prices lacks, from their provider's record (``ProviderSpec.prices``);
- nothing, for the providers that run on this machine (``ProviderSpec.local``: scripted, replay, local
  servers): they are free.

A ``[[prices]]`` entry competes with genai-prices by length: genai-prices' match counts as long as the part of
the model name it shares with its model id, so an entry for ``openai:gpt-4.1`` prices ``gpt-4.1-2025-04-14``
but not ``gpt-4.1-mini``, which genai-prices knows by that name. Entries apply to every endpoint, so a model
served through a proxy or a local server can be priced too::

    [[prices]]
    model = "openai:gpt-4o-mini"     # provider:model-prefix ("provider:*" matches every model)
    input = 0.15                     # USD per 1M input tokens
    output = 0.60                    # USD per 1M output tokens

A model that matches nothing has no price: its cost stays unknown (None), never a guess. This module imports
nothing heavy; genai-prices is loaded by the first lookup of a hosted provider's model.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from rlm_host.price_keys import parse_key, provider_key
from rlm_host.models import catalog

PER_TOKENS = 1_000_000
SEPARATORS = "-._:/@"


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens (the first tier's rates, for a tiered price).

    ``tiered`` is genai-prices' own calculation when the price comes from there; prices compare by rates only.
    """

    input: float
    output: float
    tiered: Optional[Callable[[int, int], float]] = field(default=None, compare=False, repr=False)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The cost of one call, USD."""
        if self.tiered is not None:
            return self.tiered(input_tokens, output_tokens)
        return (input_tokens * self.input + output_tokens * self.output) / PER_TOKENS


FREE = Price(0.0, 0.0)


def matches(prefix: str, name: str) -> bool:
    """Whether a price entry's ``prefix`` covers model ``name``: the same name, or the name followed by a
    separator (``gpt-4o`` covers ``gpt-4o-2024-08-06`` but not ``gpt-4o1``; ``gpt-5`` does not cover
    ``gpt-5.4``, a different model). A prefix that ends with a separator, or is empty, covers any continuation."""
    if not name.startswith(prefix):
        return False
    return len(name) == len(prefix) or not prefix or prefix[-1] in SEPARATORS or name[len(prefix)] in "-:@/"


def _longest(table: Mapping[str, Price], names: Iterable[str]) -> tuple[int, Optional[Price]]:
    """The entry with the longest prefix covering any of ``names``, as (prefix length, price); (-1, None)."""
    found = [(len(prefix), price) for prefix, price in table.items() if any(matches(prefix, name) for name in names)]
    return max(found, key=lambda entry: entry[0], default=(-1, None))


def _from_catalog(found: catalog.CatalogModel) -> tuple[int, Price]:
    """A genai-prices match as (length it counts for against a prefix, price): the length of the start the
    looked-up name shares with genai-prices' model id (``claude-3-5-haiku-20241022`` and
    ``claude-3-5-haiku-latest`` share ``claude-3-5-haiku``)."""
    shared = os.path.commonprefix([found.name, found.model.id.lower()])
    return len(shared.rstrip(SEPARATORS)), Price(*found.rates(), tiered=found.cost)


def endpoint(connector: Any) -> Optional[str]:
    """A connector's ``base_url`` when it has one (prices of hosted providers apply only at their own API)."""
    base_url = getattr(connector, "base_url", None)
    return base_url if isinstance(base_url, str) else None


class PriceTable:
    """The ``[[prices]]`` overrides over genai-prices and the providers' own prices; ``lookup`` and ``cost`` answer per
    model string."""

    def __init__(self, overrides: Mapping[str, Any] | Iterable[Any] = ()) -> None:
        self.overrides: dict[str, dict[str, Price]] = {}
        items = (overrides.items() if isinstance(overrides, Mapping)
                 else ((str(_field(e, "model")), e) for e in overrides))
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
        if not sep or not name.strip():
            return None
        provider = provider_key(provider)
        names = catalog.model_names(name)  # "models/gemini-2.5-pro" is priced as "gemini-2.5-pro"
        best = _longest(self.overrides.get(provider, {}), names)
        if catalog.serves(provider, base_url):  # genai-prices, and ProviderSpec.prices: at the provider's own API
            found = catalog.find(provider, names)
            unlisted = {prefix: Price(*rates) for prefix, rates in catalog.UNLISTED.get(provider, {}).items()}
            listed = [_from_catalog(found)] if found is not None else []
            best = max([best, *listed, _longest(unlisted, names)], key=lambda entry: entry[0])  # a tie: the earlier
        # a provider on this machine (ProviderSpec.local) is free; a plugin's free model may say so itself instead:
        # cost=0.0 on its completions, reports_cost on its connector
        return FREE if best[1] is None and provider in catalog.LOCAL else best[1]

    def cost(self, model: str, input_tokens: int, output_tokens: int, *,
             base_url: Optional[str] = None) -> Optional[float]:
        """The cost of one call in USD, or None when the model's price is unknown."""
        price = self.lookup(model, base_url=base_url)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def can_price(self, connector: Any) -> bool:
        """Whether every completion of ``connector`` gets a cost: it reports its own (``reports_cost``), or its
        model has a price here."""
        return getattr(connector, "reports_cost", False) is True or \
            self.lookup(connector.name, base_url=endpoint(connector)) is not None


def _field(entry: Any, name: str) -> Any:
    """A field of a ``[[prices]]`` entry: a table, or a PriceSettings."""
    return entry[name] if isinstance(entry, Mapping) else getattr(entry, name)


def _price(value: Any) -> Price:
    return value if isinstance(value, Price) else Price(float(_field(value, "input")), float(_field(value, "output")))


@functools.cache
def default_table() -> PriceTable:
    """The built-in prices without overrides (shared, created on first use)."""
    return PriceTable()


__all__ = ["FREE", "Price", "PriceTable", "default_table", "endpoint", "matches", "parse_key"]
