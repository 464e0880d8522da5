"""Benchmarks saved before summary schema 2 still load: their token totals are read with today's names.

Schema 1 named a ``tokens`` object's counts ``prompt`` / ``completion`` (now ``input`` / ``output``), in every
aggregate and case result of a summary and in the case files an interrupted benchmark resumes from. The store
passes what it reads through here, so compare, report and leaderboard see one format.
"""

from __future__ import annotations

from typing import Any, Callable

from rlm_bench.summary import SCHEMA_VERSION

#: Schema 1 name → schema 2 name, inside ``tokens`` objects.
RENAMED_TOKENS = {"prompt": "input", "completion": "output"}


def upgrade_tokens(holder: Any) -> Any:
    """A case result or an aggregate (parsed JSON) with its ``tokens`` in today's names; anything else unchanged."""
    if not isinstance(holder, dict) or not isinstance(holder.get("tokens"), dict):
        return holder
    return {**holder, "tokens": {RENAMED_TOKENS.get(key, key): value for key, value in holder["tokens"].items()}}


def upgrade_summary(data: Any) -> Any:
    """A summary (parsed JSON) of an older schema in today's; one of the current schema comes back unchanged."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(version, int) or version >= SCHEMA_VERSION:
        return data
    upgrades: dict[str, Callable[[Any], Any]] = {
        "metrics": upgrade_tokens,
        "by_pack": _values(upgrade_tokens),
        "by_tag": _values(_values(upgrade_tokens)),
        "cases": lambda cases: [upgrade_tokens(c) for c in cases] if isinstance(cases, list) else cases,
    }
    renamed = {key: upgrade(data[key]) for key, upgrade in upgrades.items() if key in data}
    return {**data, **renamed, "schema_version": SCHEMA_VERSION}


def _values(upgrade: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``upgrade`` applied to each value of an object (anything else unchanged)."""
    return lambda found: {k: upgrade(v) for k, v in found.items()} if isinstance(found, dict) else found
