"""Plugin discovery (entry points), contained loading, and the typed registry facade the core uses.

The names below load on first use: ``rlm --help`` imports ``rlm_host.plugins.command_cache`` alone, and the host
(pluggy, the registration records, every plugin) only when a command needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["PluginHost", "get_host", "reset_host"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from rlm_host.plugins import host

        return getattr(host, name)
    raise AttributeError(f"module 'rlm_host.plugins' has no attribute {name!r}")


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from rlm_host.plugins.host import PluginHost, get_host, reset_host
