"""What rlm-runs registers: the commands ``rlm runs`` and ``rlm replay``, the ``replay`` provider and the ``json``
exporter."""

from __future__ import annotations

from typing import Any

from rlm_host import CommandSpec, ExporterSpec, ProviderSpec, hookimpl


@hookimpl
def rlm_register_commands() -> list[CommandSpec]:
    return [CommandSpec("runs", "Saved runs: list, show one with every step, compare, export, fork; runs in progress.",
                        "rlm_runs.commands:runs_group"),
            CommandSpec("replay", "Step through a saved run: code, output, reward, sub-calls.", "rlm_runs.player:app")]


@hookimpl
def rlm_register_providers() -> list[ProviderSpec]:
    return [ProviderSpec("replay", "Answers with the model replies recorded in a saved run (replay:RUN_ID, a prefix, "
                         "latest or a .jsonl path)", "rlm_runs.provider:create",
                         settings="rlm_runs.provider:ReplaySettings", key_optional=True, example_model="latest",
                         model_files=True, local=True)]  # local: free


@hookimpl
def rlm_register_exporters() -> list[ExporterSpec]:
    return [ExporterSpec("json", "The run tree's events as one JSON array", "rlm_runs.hooks:json_exporter")]


def json_exporter(settings: object, services: object) -> Any:
    """The ``json`` exporter: a run tree's events as one JSON array."""
    import json

    return lambda events, out: out.write(json.dumps([e.model_dump(mode="json") for e in events], indent=2,
                                                    default=str) + "\n")
