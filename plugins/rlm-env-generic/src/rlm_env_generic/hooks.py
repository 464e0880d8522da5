"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import EnvironmentSpec, hookimpl


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            "generic",
            "JSON actions run_python / final / delegate with RLM Code's reward formula",
            "rlm_env_generic.environment:GenericEnvironment",  # imported only when a run uses it
            settings="rlm_env_generic.environment:GenericSettings",  # [environment.generic]
            context_on_disk=True,  # `context` only goes to the sandbox: a large text file may stay on disk
        ),
    ]
