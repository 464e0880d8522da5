"""The hook specifications: the whole contract between the host and its plugins.

A plugin is a module of functions marked ``@rlm_host.hookimpl`` and named after the hooks below; its
distribution points at it from the ``rlm`` entry-point group. Every registration hook returns a list of typed
records (see ``rlm_host.components``) and must stay cheap: import heavy libraries inside the factories the
records name, never at module level, so ``rlm --help`` stays fast. Built-in components register through these
same hooks (``rlm_host.builtin``).
"""

from __future__ import annotations

import pluggy

from rlm_host.components import (
    BenchmarkPackSpec,
    CommandSpec,
    DoctorCheck,
    EnvironmentSpec,
    FrameworkSpec,
    ProviderSpec,
    SandboxSpec,
    SinkSpec,
)

PROJECT = "rlm"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def rlm_register_environments() -> list[EnvironmentSpec]:
    """Environments: the action set, prompts and reward rules of a run (``rlm run --env NAME``)."""


@hookspec
def rlm_register_frameworks() -> list[FrameworkSpec]:
    """Framework adapters that run a task through another agent framework (``rlm run --framework NAME``)."""


@hookspec
def rlm_register_sandboxes() -> list[SandboxSpec]:
    """Sandbox runtimes executing model-written code in a persistent REPL (``rlm run --sandbox NAME``)."""


@hookspec
def rlm_register_sinks() -> list[SinkSpec]:
    """Observability sinks receiving the event stream of every run."""


@hookspec
def rlm_register_benchmark_packs() -> list[BenchmarkPackSpec]:
    """Benchmark packs: presets of cases with their data and expected answers (``rlm bench run``)."""


@hookspec
def rlm_register_providers() -> list[ProviderSpec]:
    """LLM providers, addressed as ``provider:model`` in ``--model`` and ``--sub-model``."""


@hookspec
def rlm_register_commands() -> list[CommandSpec]:
    """CLI sub-commands added to ``rlm`` (shown in ``rlm --help``, imported only when run)."""


@hookspec
def rlm_doctor_checks() -> list[DoctorCheck]:
    """Extra readiness checks shown by ``rlm plugins doctor`` (an engine reachable, a key present…)."""


#: Registration hook name → the component kind its records belong to. The facade in
#: ``rlm_host.plugins.host`` has one typed method per entry.
REGISTRATION_HOOKS: dict[str, str] = {
    "rlm_register_environments": EnvironmentSpec.kind,
    "rlm_register_frameworks": FrameworkSpec.kind,
    "rlm_register_sandboxes": SandboxSpec.kind,
    "rlm_register_sinks": SinkSpec.kind,
    "rlm_register_benchmark_packs": BenchmarkPackSpec.kind,
    "rlm_register_providers": ProviderSpec.kind,
    "rlm_register_commands": CommandSpec.kind,
    "rlm_doctor_checks": DoctorCheck.kind,
}
