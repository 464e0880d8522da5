"""The built-in environment: pure_rlm, the paper's loop (the default; the others are plugins)."""

from __future__ import annotations

from rlm_host.components import EnvironmentSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_environments() -> list[EnvironmentSpec]:
    return [
        EnvironmentSpec("pure_rlm", "Paper-faithful RLM: context as a REPL variable, llm_query from code, FINAL to "
                        "finish", "rlm_host.environments.pure_rlm.environment:PureRLMEnvironment",
                        aliases=("pure-rlm",),
                        settings="rlm_host.environments.pure_rlm.environment:PureRLMSettings", context_on_disk=True),
    ]
