"""Registers an environment name that rlm-test-good already uses, a command named like a built-in one, and one
sink that is fine."""

from rlm_host import CommandSpec, EnvironmentSpec, SinkSpec, hookimpl


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec("echo-env", "A second echo-env", "builtins:dict")]


@hookimpl
def rlm_register_sinks():
    return [SinkSpec("clash-sink", "A sink that does not clash", "builtins:dict")]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("config", "A command named like the built-in `rlm config`", "builtins:print")]
