"""One hook raises, the other works: only the failing hook's components are lost."""

from rlm_host import EnvironmentSpec, hookimpl


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec("raiser-env", "Registered before the other hook fails", "builtins:dict")]


@hookimpl
def rlm_register_sandboxes():
    raise RuntimeError("sandbox registry exploded")
