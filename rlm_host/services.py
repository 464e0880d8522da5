"""What the host lends a component's factory besides its settings: the one factory convention of every kind.

Every component factory is called as ``factory(settings, services)``: ``settings`` is the validated
``[<kind>.<name>]`` section (None when the component declares no settings model), ``services`` one of the small
frozen objects below. Readiness checks are called as ``check(settings)`` with the same validated section.

============  =================================================  ==========================================
kind          services                                           the factory returns
============  =================================================  ==========================================
provider      ``ProviderServices`` (home, model, options)        a ``ModelConnector``
sandbox       ``SandboxServices`` (home, limits)                 a ``SandboxSession``
environment   ``EnvironmentContext`` (the run: models, sandbox…)  an ``Environment``
sink          ``HostServices`` (home)                            a ``Sink``
benchmark     ``HostServices`` (home)                            a list of cases (``BenchmarkCase`` or dicts)
framework     (the adapter contract, not yet defined)             –
============  =================================================  ==========================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rlm_host.llm.protocol import ModelOptions
from rlm_host.sandbox.protocol import SandboxLimits


@dataclass(frozen=True)
class HostServices:
    """``home``: the run home (runs, benchmarks, caches), already expanded; create sub-folders of it freely."""

    home: Path = field(default_factory=lambda: Path(".rlm"))


@dataclass(frozen=True)
class ProviderServices(HostServices):
    """``model``: the part after ``provider:`` in the model string; ``options``: the connection options of the run."""

    model: str = ""
    options: ModelOptions = field(default_factory=ModelOptions)


@dataclass(frozen=True)
class SandboxServices(HostServices):
    """``limits``: what a session must enforce (exec timeout, memory, output size)."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
