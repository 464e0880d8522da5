"""Misspells a hook name: the host must say so instead of ignoring it."""

from rlm_host import EnvironmentSpec, hookimpl


@hookimpl
def rlm_register_enviroments():
    return [EnvironmentSpec("never-seen", "Never registered", "builtins:dict")]
