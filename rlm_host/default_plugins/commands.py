"""Built-in sub-commands of ``rlm``, registered like any plugin's (and so refused like them on a clash)."""

from __future__ import annotations

from rlm_host.components import CommandSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_commands() -> list[CommandSpec]:
    return [
        CommandSpec("run", "Run a task with an RLM over a context (file, directory or stdin).",
                    "rlm_host.cli.run_cmd:run"),
        CommandSpec("chat", "Talk with an RLM about a context: turns keep variables and history; resumable.",
                    "rlm_host.cli.chat_cmd:chat"),
        CommandSpec("runs", "List saved runs or show one with every step.", "rlm_host.cli.runs_cmd:runs_group"),
        CommandSpec("replay", "Step through a saved run: code, output, reward, sub-calls.",
                    "rlm_host.cli.replay_cmd:app"),
        CommandSpec("models", "List model providers, their keys and readiness, and what auto picks.",
                    "rlm_host.cli.models_cmd:app"),
        CommandSpec("frameworks", "List frameworks (--framework), their mode and readiness.",
                    "rlm_host.cli.frameworks_cmd:app"),
        CommandSpec("plugins", "List installed plugins and check their readiness.", "rlm_host.cli.plugins_cmd:app"),
        CommandSpec("config", "Show the effective settings and where each came from; trust a project's config.",
                    "rlm_host.cli.config_cmd:app"),
    ]
