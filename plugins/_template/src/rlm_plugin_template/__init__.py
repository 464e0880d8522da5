"""rlm-plugin-template: a copyable rlm plugin distribution."""

PLUGIN_NAME = "rlm-plugin-template"
#: The oldest rlm-host this plugin works with (checked by its doctor check).
MIN_HOST_VERSION = (0, 1)
