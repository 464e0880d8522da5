"""Built-in sandbox: ``process``, the zero-dependency reference runtime (crash isolation, not a boundary)."""

from __future__ import annotations

from rlm_host.components import SandboxSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_sandboxes() -> list[SandboxSpec]:
    return [
        SandboxSpec(
            "process",
            "A separate Python worker process: crash isolation only, NOT a security boundary (opt-in)",
            "rlm_host.sandbox.process:create",
            settings="rlm_host.sandbox.process:ProcessSettings",
            security_boundary=False,
            workspace=True,  # the working directory only: writes are not confined to it
            # as ProcessSandbox.info says (SandboxContract checks it; that module is not imported at start)
            isolation="separate OS process: crash isolation only, NOT a security boundary "
            "(same user, same filesystem, network not blocked)",
        )
    ]
