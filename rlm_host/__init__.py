"""rlm-host: the minimal host of the rlm framework for Recursive Language Models.

Plugin authors need only this module: ``hookimpl`` to mark hook implementations, and the typed records
(``EnvironmentSpec``, ``SandboxSpec``, …) their registration hooks return. Importing it stays cheap: no
pydantic, no plugin, no framework.
"""

from rlm_host.components import (
    BenchmarkPackSpec,
    CommandSpec,
    Component,
    DoctorCheck,
    EnvironmentSpec,
    FrameworkSpec,
    ProviderSpec,
    Readiness,
    SandboxSpec,
    SinkSpec,
)
from rlm_host.errors import RlmError
from rlm_host.hookspecs import hookimpl


def __getattr__(name: str) -> str:
    if name == "__version__":  # read from metadata on demand, not at import
        from rlm_host.plugins.discovery import host_version

        return host_version()
    raise AttributeError(f"module 'rlm_host' has no attribute {name!r}")


__all__ = [
    "__version__",
    "hookimpl",
    "RlmError",
    "Readiness",
    "Component",
    "EnvironmentSpec",
    "FrameworkSpec",
    "SandboxSpec",
    "SinkSpec",
    "BenchmarkPackSpec",
    "ProviderSpec",
    "CommandSpec",
    "DoctorCheck",
]
