"""Registers the ``replay`` and OpenAI-compatible providers and the ``models`` command for in-process tests,
whether or not ``rlm_host/builtin.py`` and ``rlm_host/cli/app.py`` list them already (nothing is registered
twice)."""

from __future__ import annotations

import pytest

from rlm_host import builtin
from rlm_host.cli import app as cli_app
from rlm_host.components import ProviderSpec
from rlm_host.hookspecs import hookimpl
from rlm_host.llm.openai_compatible import provider_specs

REPLAY_SPEC = ProviderSpec(
    "replay",
    "Answers with the model replies recorded in a saved run (replay:RUN_ID, a prefix, latest or a .jsonl path)",
    "rlm_host.trajectory.replay_provider:create",
    settings="rlm_host.trajectory.replay_provider:ReplaySettings",
)
MODELS_COMMAND = ("rlm_host.cli.models_cmd:app", "List model providers, their keys and readiness, and what auto picks.")


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    """Add the providers to the built-in hook (before the plugin host is created) and the command to the CLI."""
    original = builtin.rlm_register_providers

    @hookimpl
    def rlm_register_providers() -> list[ProviderSpec]:
        specs = list(original())
        names = {spec.name for spec in specs}
        return specs + [spec for spec in (REPLAY_SPEC, *provider_specs()) if spec.name not in names]

    monkeypatch.setattr(builtin, "rlm_register_providers", rlm_register_providers)
    if "models" not in cli_app.BUILTIN_COMMANDS:
        monkeypatch.setitem(cli_app.BUILTIN_COMMANDS, "models", MODELS_COMMAND)
