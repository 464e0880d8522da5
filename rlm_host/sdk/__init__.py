"""The SDK kits: one documented module per kind of plugin (and one for programs that embed rlm).

The ``rlm_host`` root holds what every plugin needs (the registration records, ``hookimpl``, the errors, the
services and the run's results); each kit below holds what one kind of plugin builds on. Import from the kit
your plugin is of — only the names in its ``__all__`` are public, the modules behind them may move between
releases. Importing ``rlm_host.sdk`` itself loads no kit.

=================================  ======================================================================
kit                                for
=================================  ======================================================================
``rlm_host.sdk.models``            providers: the connector protocol, retries, token counts
``rlm_host.sdk.sandbox``           sandbox runtimes: the session protocol, the worker kit, workspaces
``rlm_host.sdk.context``           context loaders: documents, bounded child processes, signed caches
``rlm_host.sdk.environments``      environments: the protocol, the REPL kit, JSON actions
``rlm_host.sdk.frameworks``        frameworks: the contract, the sandbox as tools, tool calls as text
``rlm_host.sdk.observability``     sinks: the sink protocol and the span tree of a run
``rlm_host.sdk.embedding``         programs and commands that run rlm: ``RLM``, the runner, settings, run store
``rlm_host.sdk.commands``          plugin commands: ``rlm run``'s own command, run options as flags, the terminal
=================================  ======================================================================

Test helpers and the contract suites are in ``rlm_host.testing``.
"""

__all__: list[str] = []
