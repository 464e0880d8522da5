"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host`` (never
``mcp``: the SDK loads when a harness run starts its servers)."""

from rlm_host import BenchmarkPackSpec, CommandSpec, EnvironmentSpec, ToolboxSpec, hookimpl

from rlm_harness import SANDBOX_PACKAGES


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            "harness",
            "A tool-using coding agent over a project folder (--workdir): files, search, commands and tests in the "
            "sandbox, MCP servers' tools, approvals",
            "rlm_harness.environment:HarnessEnvironment",  # imported only when a run uses it
            settings="rlm_harness.settings:HarnessSettings",  # [environment.harness]
            workspace=True,  # the project folder is the sandbox's read-write working directory (no Monty)
            sandbox_packages=SANDBOX_PACKAGES,
        ),
    ]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("harness", "A coding agent over a project folder with MCP tools and approvals.",
                        "rlm_harness.cli:harness_group")]


@hookimpl
def rlm_register_benchmark_packs():
    return [
        BenchmarkPackSpec("coding_quick", "General coding: 3 small Python tasks in a project folder, scored by "
                          "hidden tests in the sandbox", "rlm_harness.bench:coding_quick"),
    ]


@hookimpl
def rlm_register_toolboxes():
    return [
        ToolboxSpec("mcp", "Each tool of the MCP servers a run names ([mcp_servers.NAME], --mcp-config FILE) as a "
                    "function in its REPL: mcp__SERVER__TOOL(...)", "rlm_harness.toolbox:McpToolbox",
                    option="mcp_servers"),
    ]
