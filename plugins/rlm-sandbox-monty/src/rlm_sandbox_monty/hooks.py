"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports rlm_host only."""

from rlm_host import SandboxSpec, hookimpl

from rlm_sandbox_monty import INSTALL_HINT, ISOLATION


@hookimpl
def rlm_register_sandboxes():
    return [
        SandboxSpec(
            "monty",
            "Monty, a sandboxed Python subset in Rust worker processes: a security boundary (the default)",
            "rlm_sandbox_monty.runtime:create",
            settings="rlm_sandbox_monty.settings:MontySettings",
            security_boundary=True,
            isolation=ISOLATION,
            priority=20,  # the default sandbox: ahead of docker (10), which needs an engine
            requires=("pydantic_monty",),
            install_hint=INSTALL_HINT,
        )
    ]
