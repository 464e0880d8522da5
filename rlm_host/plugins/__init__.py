"""Plugin discovery (entry points), contained loading, and the typed registry facade the core uses."""

from rlm_host.plugins.host import PluginHost, get_host, reset_host

__all__ = ["PluginHost", "get_host", "reset_host"]
