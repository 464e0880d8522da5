"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import CommandSpec, hookimpl


@hookimpl
def rlm_register_commands():
    return [CommandSpec("mcp", "An MCP server exposing rlm runs, saved runs and benchmarks as tools.",
                        "rlm_mcp.cli:app")]
