"""The sub-models a run's code may name: an allow-list, not a resolver.

Model-written code is hostile, and so is every string it passes to ``llm_query(..., model=...)``: a provider
string can name a file the host would open (``scripted:/path``, ``replay:/other/run.jsonl``, a weights path).
So code, actions and framework tools pick among the names the user chose — the run's model, its sub-model and
``[run] allowed_sub_models`` (``--allow-sub-model``) — by name or alias; anything else is refused with an error
naming the allowed ones, and nothing outside the list ever reaches a provider. Each allowed model gets one
connector per run tree, built on first use.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Iterable, Optional

from rlm_host.errors import ModelError, RlmError
from rlm_host.models.protocol import ModelConnector

if TYPE_CHECKING:
    from rlm_host.plugins.host import PluginHost

#: Longer strings are refused before any parsing (a model name is short).
MAX_NAME_CHARS = 300


class SubModelRefused(ModelError):
    """Code named a model the user did not allow for this run."""


class SubModels:
    """Allowed model names → connectors. ``ready`` maps names to connectors that exist already (root, sub)."""

    def __init__(self, allowed: Iterable[str], ready: dict[str, ModelConnector],
                 make_connector: Callable[[str], ModelConnector],
                 host: Optional["PluginHost"] = None) -> None:
        self._host, self._make, self._lock = host, make_connector, threading.Lock()
        self._connectors: dict[str, ModelConnector] = {}
        self._names: dict[str, str] = {}  # every accepted spelling → the allowed entry it stands for
        self.allowed: list[str] = []
        for name, connector in ready.items():
            self._allow(name)
            self._connectors[name] = connector
            self._allow(connector.name, entry=name)
        for name in allowed:
            self._allow(name)

    def connector(self, model: str) -> ModelConnector:
        """The connector for ``model`` (an allowed name, an alias of one, or its bare model part)."""
        entry = self.entry_for(model)
        with self._lock:
            if entry not in self._connectors:
                self._connectors[entry] = self._make(entry)
            return self._connectors[entry]

    def entry_for(self, model: object) -> str:
        """The allowed entry ``model`` names; ``SubModelRefused`` naming the allowed ones otherwise."""
        if isinstance(model, str) and len(model) <= MAX_NAME_CHARS:
            spelled = model.strip()
            for key in (spelled, self._canonical(spelled)):
                if key and key in self._names:
                    return self._names[key]
            bare = [entry for entry in self.allowed if entry.partition(":")[2] == spelled]
            if len(set(bare)) == 1:
                return bare[0]
        raise SubModelRefused(f"model {repr(model)[:80]} is not allowed in this run; allowed: "
                              f"{', '.join(self.allowed)}", hint="the user allows more sub-models with "
                              "--allow-sub-model NAME or [run] allowed_sub_models")

    def _allow(self, name: Optional[str], entry: Optional[str] = None) -> None:
        if not name:
            return
        entry = self._names.get(entry or name, entry or name)
        if entry not in self.allowed:
            self.allowed.append(entry)
        for key in (name, self._canonical(name)):
            if key:
                self._names.setdefault(key, entry)

    def _canonical(self, model: str) -> Optional[str]:
        """``provider:model`` with the provider's registered name (aliases resolved); None if it names none."""
        provider, sep, rest = model.partition(":")
        if not (sep and provider and rest) or self._host is None:
            return None
        try:
            registry = self._host.providers()
            return f"{registry.get(provider).name}:{rest}" if provider in registry else None
        except RlmError:
            return None
