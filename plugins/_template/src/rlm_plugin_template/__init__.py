"""rlm-plugin-template: a copyable rlm plugin distribution (a sink, a command and a doctor check)."""

PLUGIN_NAME = "rlm-plugin-template"
