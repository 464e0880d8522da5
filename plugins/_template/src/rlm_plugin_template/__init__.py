"""rlm-plugin-template: a copyable rlm plugin distribution (an environment, a provider, a framework, a sink,
a benchmark pack, a command, a doctor check)."""

PLUGIN_NAME = "rlm-plugin-template"
