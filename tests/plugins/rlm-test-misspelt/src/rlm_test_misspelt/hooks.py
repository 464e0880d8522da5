"""Misspells a hook name beside a correct one: the host must say so, and keep the correct hook working."""

from rlm_host import EnvironmentSpec, SinkSpec, hookimpl


@hookimpl
def rlm_register_enviroments():
    return [EnvironmentSpec("never-seen", "Never registered", "builtins:dict")]


@hookimpl
def rlm_register_sinks():
    return [SinkSpec("misspelt-sink", "Registered by a plugin that also misspells a hook", "builtins:dict")]
