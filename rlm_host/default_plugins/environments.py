"""Built-in environments: pure_rlm (the paper's loop, the default) and generic (RLM Code's JSON actions)."""

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
        EnvironmentSpec("generic", "JSON actions run_python / final / delegate with RLM Code's reward formula",
                        "rlm_host.environments.generic:GenericEnvironment",
                        settings="rlm_host.environments.generic:GenericSettings", context_on_disk=True),
    ]
