"""What the host lends a component's factory besides its settings: the one factory convention of every kind.

Every component factory is called as ``factory(settings, services)``: ``settings`` is the validated
``[<kind>.<name>]`` section (None when the component declares no settings model), ``services`` one of the small
frozen objects below. Readiness checks are called as ``check(settings)`` with the same validated section.

============  =================================================  ==========================================
kind          services                                           the factory returns
============  =================================================  ==========================================
provider      ``ProviderServices`` (home, model, options)        a ``ModelConnector``
sandbox       ``SandboxServices`` (home, limits, workspace…)     a ``SandboxSession``
environment   ``EnvironmentContext`` (the run: models, sandbox…)  an ``Environment``
sink          ``HostServices`` (home)                            a ``Sink``
context_loader ``HostServices`` (home, e.g. for a cache)          a loader: ``load(path)`` → text, JSON, Documents
benchmark     ``HostServices`` (home)                            a list of cases (``BenchmarkCase`` or dicts)
framework     ``FrameworkContext`` (the run: models, tools…)      an adapter with ``run()`` and ``close()``
============  =================================================  ==========================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

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
    """``limits``: what a session must enforce (exec timeout, memory, output size).

    ``workspace``: a host folder the session must make its working directory, read-write, and the only host
    folder code in it can write (given only to runtimes whose spec declares ``workspace=True``; an environment
    that edits a project asks for it). ``packages``: Python distributions (pip requirement strings) the session's
    interpreter must be able to import, e.g. ``("dspy", "pytest")`` for a verifier; a runtime that cannot provide
    them says so with the command that would (the Docker runtime: a derived image)."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    workspace: Optional[Path] = None
    packages: tuple[str, ...] = ()
