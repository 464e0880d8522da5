"""Hosted models' prices and context windows, from the maintained ``genai-prices`` package.

Its data ships inside the wheel and is never fetched (``UpdatePrices`` is not used), and it knows tiered prices
(a long Claude or Gemini prompt costs more per token). ``genai_prices`` is imported on the first lookup only
(≈ 0.2 s, then ≈ 20 ms to load its data; a lookup after that takes ≈ 0.1 ms): nothing calls it at CLI start.

Model strings name our providers; each provider's record says which genai-prices provider it is
(``ProviderSpec.price_id``), and the plugin host copies that here when it registers the provider (:func:`learn`),
with the prices of models genai-prices lacks, whether it is local (free) and how its server is started. A provider
without a price id (the local servers, a script) is never found here.
"""

from __future__ import annotations

import contextlib
import functools
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Optional

#: What the registered providers say, by name as price keys spell it (``rlm_host.price_keys.provider_key``):
#: genai-prices ids, prices genai-prices lacks (model prefix → USD per 1M input, output tokens), the local ones
#: and their servers' start commands. Facts about a name, never removed: a host with fewer plugins forgets nothing.
PROVIDER_IDS: dict[str, str] = {}
UNLISTED: dict[str, dict[str, tuple[float, float]]] = {}
LOCAL: set[str] = set()
START_COMMANDS: dict[str, str] = {}


def learn(spec: Any) -> None:
    """Take in what a registered ``ProviderSpec`` says about prices, aliases and its server."""
    from rlm_host.price_keys import PROVIDER_ALIASES, provider_key

    name = provider_key(spec.name)
    PROVIDER_ALIASES.update({provider_key(alias): name for alias in spec.aliases})
    if spec.price_id:
        PROVIDER_IDS[name] = spec.price_id
    if spec.prices:
        UNLISTED[name] = {prefix: (float(i), float(o)) for prefix, i, o in spec.prices}
    if spec.local:
        LOCAL.add(name)
    if spec.start_command:
        START_COMMANDS[name] = spec.start_command


@dataclass(frozen=True)
class CatalogModel:
    """A model genai-prices knows, found under ``name`` (one of the names looked up)."""

    name: str
    provider: Any  # genai_prices.types.Provider
    model: Any  # genai_prices.types.ModelInfo

    def rates(self) -> tuple[float, float]:
        """USD per million input and output tokens at the first tier (0 for a side the model does not bill)."""
        price = self.model.get_prices(datetime.now(tz=UTC))
        return _base(getattr(price, "input_mtok", None)), _base(getattr(price, "output_mtok", None))

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The cost of one call in USD, tiers applied (a prompt past a tier's threshold pays its rate)."""
        from genai_prices import Usage

        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        return float(self.model.calc_price(usage, self.provider).total_price)


@functools.lru_cache(maxsize=1024)
def find(provider: str, names: tuple[str, ...]) -> Optional[CatalogModel]:
    """The first of ``names`` (lower-case model names) genai-prices knows for ``provider``; None when it knows none.
    Remembered per process: the data is fixed, and a lookup walks every model of the provider (~0.6 ms)."""
    provider_id = PROVIDER_IDS.get(provider)
    if provider_id is None:
        return None
    from genai_prices.data_snapshot import get_snapshot

    for name in names:
        with contextlib.suppress(LookupError):
            return CatalogModel(name, *get_snapshot().find_provider_model(name, None, provider_id, None))
    return None


def serves(provider: str, base_url: Optional[str]) -> bool:
    """Whether ``base_url`` is ``provider``'s own API (or absent): only there are its list prices the bill."""
    if not base_url:
        return True
    provider_id = PROVIDER_IDS.get(provider)
    if provider_id is None:
        return False
    from genai_prices.data_snapshot import get_snapshot

    try:
        record = get_snapshot().find_provider(None, provider_id, None)
    except LookupError:
        return False
    return re.match(record.api_pattern, base_url) is not None


def context_window(provider: str, model: str) -> Optional[int]:
    """``provider:model``'s context window in tokens per genai-prices, None when it does not say."""
    found = find(provider, model_names(model))
    return found.model.context_window if found is not None else None


def model_names(model: str) -> tuple[str, ...]:
    """The names a model is looked up by: the name in lower case, then its last path segment
    (``models/gemini-2.5-pro`` is ``gemini-2.5-pro``; ``openai/gpt-4o`` on OpenRouter matches whole first)."""
    lowered = model.strip().lower()
    last = lowered.rsplit("/", 1)[-1]
    return (lowered, last) if last != lowered else (lowered,)


def _base(price: Any) -> float:
    """A genai-prices price (Decimal, tiered, or None) as a float at its first tier."""
    return 0.0 if price is None else float(getattr(price, "base", price))


__all__ = ["LOCAL", "PROVIDER_IDS", "START_COMMANDS", "UNLISTED", "CatalogModel", "context_window", "find", "learn",
           "model_names", "serves"]
