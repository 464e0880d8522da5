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
framework     ``FrameworkContext`` (the run: models, tools…)      a ``Framework``: ``run()``, ``close()``
command       ``CommandServices.of(ctx)`` (home, settings)       a typer app, a click command or a function
============  =================================================  ==========================================

A command is not built by a factory: it runs inside ``rlm``, so it asks for its services with the click (or
typer) context it runs in — ``CommandServices.of(ctx)`` — and reads its settings there, never by loading the
configuration again (``--config``, ``--trust-config`` and the global flags are honoured that way)::

    @click.command()
    @click.pass_context
    def prune(ctx):
        services = CommandServices.of(ctx)
        settings = services.component("sandbox", "acme")   # the validated [sandbox.acme] section
        cache = services.home / "acme"
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from rlm_host.models.protocol import ModelOptions
from rlm_host.sandbox.protocol import SandboxLimits

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rlm_host.config import LoadedSettings


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


@dataclass(frozen=True)
class CommandServices(HostServices):
    """What a plugin's sub-command of ``rlm`` reads instead of globals: ``home`` (the run home) and ``settings``
    (the effective ``LoadedSettings`` of the running command: every source merged, component sections validated
    against the installed plugins). Get it with ``CommandServices.of(ctx)``. ``config_file`` (``rlm --config``) and
    ``trust_config`` (``--trust-config``) say how they were read, for a command that loads settings again in
    another process (a benchmark sweep's workers)."""

    settings: Optional["LoadedSettings"] = field(default=None, repr=False)
    config_file: Optional[Path] = None
    trust_config: bool = False

    @classmethod
    def of(cls, ctx: Any = None) -> "CommandServices":
        """The services of the ``rlm`` command that ``ctx`` (a click or typer ``Context``, or one of a click
        command run inside ``rlm``; default: the command being run) belongs to; ``RuntimeError`` outside ``rlm``."""
        if ctx is None:
            from typer import _click as click  # typer vendors its click: the contexts are that module's

            ctx = click.globals.get_current_context()
        provide = getattr(ctx.find_root().obj, "command_services", None)
        if provide is None:
            raise RuntimeError("CommandServices.of(ctx) is for sub-commands of `rlm`")
        services = provide()
        assert isinstance(services, CommandServices)
        return services

    def component(self, kind: str, name: str) -> Optional["BaseModel"]:
        """The validated ``[<kind>.<name>]`` section (its defaults when absent; None for a component without
        settings), e.g. ``component("sandbox", "acme")`` for a command of the plugin of the ``acme`` sandbox."""
        if self.settings is None:
            return None
        return self.settings.component(kind, name)
