"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import CommandSpec, hookimpl


@hookimpl
def rlm_register_commands():
    return [CommandSpec("tui", "A terminal UI: browse, follow, replay and compare runs; run benchmarks.",
                        "rlm_tui.cli:app")]
