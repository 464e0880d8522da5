"""Trajectories written before schema 2 still load: their events are read with today's names.

Schema 1 (no ``schema_version`` in ``run_start``) named token counts ``prompt_tokens`` / ``completion_tokens``
in every ``usage`` — a step's and a result's per role, a sub-call's own. ``upgrade_event`` renames them where
a line is loaded (``RunStore``), so everything downstream — replay, listings, the ``replay:`` provider — sees
one format.
"""

from __future__ import annotations

from typing import Any

#: Schema 1 name → schema 2 name, inside ``usage`` objects.
RENAMED_USAGE = {"prompt_tokens": "input_tokens", "completion_tokens": "output_tokens"}


def upgrade_event(line: dict[str, Any]) -> dict[str, Any]:
    """An event line (parsed JSON) with today's names; a line already in schema 2 comes back unchanged."""
    data = line.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("usage"), dict):
        return line
    return {**line, "data": {**data, "usage": _renamed(data["usage"])}}


def _renamed(usage: dict[str, Any]) -> dict[str, Any]:
    """A ``usage`` object renamed, its per-role objects (``root``, ``sub``) too."""
    return {RENAMED_USAGE.get(key, key): _renamed(value) if isinstance(value, dict) else value
            for key, value in usage.items()}
