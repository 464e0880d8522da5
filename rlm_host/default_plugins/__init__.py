"""The host's own components, as ordinary plugin modules.

``PluginHost`` registers each module of ``DEFAULT_PLUGINS`` by name before any installed distribution's, through
the same hooks and with the same containment, so the built-ins follow the rules every plugin follows (and a
plugin clashing with one of their names is refused the same way). The implementations live in their own
packages (``rlm_host.environments``, ``rlm_host.sandbox``, ``rlm_host.models``…); these modules only register them.
"""
