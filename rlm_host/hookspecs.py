"""The hook specifications: the whole contract between the host and its plugins, one hook per kind.

A plugin is a module of functions marked ``@rlm_host.hookimpl`` and named after the hooks below; its
distribution points at it from the ``rlm`` entry-point group (``[project.entry-points.rlm]``). The host's own
components are plugins too: the modules of ``rlm_host.default_plugins``, registered by name before any
distribution's, through these same hooks.

Every hook here is a *registration* hook: it takes no argument and returns a list of typed records
(``rlm_host.components``). The host calls each implementation on its own, once per process, the first time a
component of that kind is needed (``rlm plugins list`` and ``rlm plugins doctor`` call them all). A record names
its implementation lazily, as ``"package.module:attribute"``, so a hook must stay cheap: import heavy libraries
inside the factories, never at the hook module's top level, and ``rlm --help`` stays fast.

What becomes of a hook's result:

- each record is validated (a name of lower-case letters, digits, ``.``, ``-`` or ``_``; a one-line
  description); a result that is not a list of the hook's record type marks the plugin *broken*, and so does an
  exception raised by the hook — the other plugins, and this plugin's other hooks, keep working;
- a name (or alias) registered by two distributions for the same kind is refused for both, with an error naming
  them;
- ``@hookimpl(tryfirst=True)`` / ``trylast=True`` order a plugin's records before or after the others' (which
  matters only for listings and for ties of ``priority``); ``wrapper=True`` and ``hookwrapper=True`` are
  refused, since a registration hook has nothing to wrap.

Every component factory is called as ``factory(settings, services)`` and every readiness check as
``check(settings)``: see ``rlm_host.services`` for what each kind receives and returns.
"""

from __future__ import annotations

import pluggy

from rlm_host.components import (BenchmarkPackSpec, CommandSpec, ContextLoaderSpec, DoctorCheck, EnvironmentSpec,
                                  ExporterSpec, FrameworkSpec, ProviderSpec, SandboxSpec, SinkSpec, ToolboxSpec)

PROJECT = "rlm"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# --------------------------------------------------------------------------------------------- running a task


@hookspec
def rlm_register_environments() -> list[EnvironmentSpec]:
    """Environments: the rulebook of a run — its prompts, actions and rewards (``rlm run --env NAME``).

    Called when a run is planned and by listings. The factory is called once per run (and per child run) as
    ``factory(settings, ctx: EnvironmentContext) -> Environment``; the runner then calls ``start()``, then
    ``messages(step)`` / ``execute(reply, step)`` each step, ``synthesize()`` when steps ran out, and
    ``close()`` at the end (the kit: ``rlm_host.sdk.environments``). An environment may declare a
    ``reply_format`` (``rlm_host.sdk.models.ReplyFormat``: a GBNF grammar, a JSON schema), which the runner hands to the
    root model's connector on each turn where it can be enforced. Test it with ``rlm_host.testing.EnvironmentContract``.
    """


@hookspec
def rlm_register_frameworks() -> list[FrameworkSpec]:
    """Frameworks that run a task through another agent framework (``rlm run --framework NAME``).

    The factory is called once per run as ``factory(settings, ctx: FrameworkContext) -> Framework``
    (``rlm_host.sdk.frameworks``): it drives the agent framework it wraps with the run's models (``ctx.root`` /
    ``ctx.sub``) and sandbox (``ctx.tools``), reports each step with ``ctx.step(...)``, and its ``run()`` returns
    a ``FrameworkOutcome``. ``mode`` says whether the framework implements the RLM loop itself (``native_rlm``)
    or is a tool-calling ``agent``. Test it with ``rlm_host.testing.FrameworkContract``.
    """


@hookspec
def rlm_register_sandboxes() -> list[SandboxSpec]:
    """Sandbox runtimes executing model-written code in a persistent REPL (``rlm run --sandbox NAME``).

    The factory is called once per run (and per child run) as ``factory(settings, services: SandboxServices)
    -> SandboxSession`` (``rlm_host.sdk.sandbox``). ``--sandbox auto`` picks the ready runtime with
    ``security_boundary=True`` and the highest ``priority``; a runtime that is not a boundary is used only when
    named. Test it with ``rlm_host.testing.SandboxContract``.
    """


@hookspec
def rlm_register_providers() -> list[ProviderSpec]:
    """LLM providers, addressed as ``provider:model`` in ``--model`` and ``--sub-model``.

    The factory is called once per model string of a run tree as ``factory(settings, services: ProviderServices) ->
    ModelConnector`` (``services.model`` is the part after ``provider:``). The record's fields tell the host what it
    needs without knowing the provider: key variables, default base URL, example and default models, and whether and how
    eagerly ``--model auto`` may pick it. A connector that can enforce an environment's reply format declares the kinds
    in ``reply_formats`` (``rlm_host.sdk.models.ModelConnector``). Test it with ``rlm_host.testing.ProviderContract``.
    """


# --------------------------------------------------------------------------------------------- observing runs


@hookspec
def rlm_register_sinks() -> list[SinkSpec]:
    """Observability sinks: receive the event stream of the runs that name them in ``run.sinks`` (when it is not
    set: of every run, for a sink whose spec says ``default=True``).

    The factory is called once per run tree as ``factory(settings, services: HostServices) -> Sink``; the sink's
    ``handle(event)`` gets every ``RunEvent`` in order and ``close()`` is called when the run tree ends. A sink
    that raises is disabled for the run with one warning; the run goes on. Test it with
    ``rlm_host.testing.SinkContract``.
    """


@hookspec
def rlm_register_context_loaders() -> list[ContextLoaderSpec]:
    """Context loaders: read files of the formats they claim (``suffixes``) for ``--context`` and the Python API.

    The factory is called once per loading as ``factory(settings, services: HostServices)`` and returns an object with
    ``load(path) -> str | JSON value | rlm_host.sdk.context.Documents``; a file it cannot read (encrypted, corrupt, no
    text) raises ``rlm_host.InputError`` naming the file and what to do. Text and JSON are the built-in loaders. Test it
    with ``rlm_host.testing.ContextLoaderContract``.
    """


@hookspec
def rlm_register_benchmark_packs() -> list[BenchmarkPackSpec]:
    """Benchmark packs: presets of cases carrying their data and expected answers (``rlm bench run``).

    The factory is called when a preset is listed in detail or run, as ``factory(settings, services:
    HostServices)``, and returns the preset's cases: a list of dicts (or of the benchmark application's
    ``BenchmarkCase``) with a unique ``case_id``, a ``task`` (or a generated context that brings one) and an
    ``expected`` answer. Test it with ``rlm_host.testing.BenchmarkPackContract``.
    """


@hookspec
def rlm_register_exporters() -> list[ExporterSpec]:
    """Run exporters: a saved run tree in another format (``rlm runs export RUN --format NAME``).

    The factory is called once per export as ``factory(None, services: HostServices)`` and returns a callable
    ``write(events, out)`` writing the tree of ``events`` (``RunEvent``s, as loaded) to the text stream ``out``.
    """


@hookspec
def rlm_register_toolboxes() -> list[ToolboxSpec]:
    """Toolboxes: functions offered to the REPL of every run from a source the user configures, turned on by the
    run option the record names (``mcp_servers``: each tool of the configured MCP servers).

    The factory is called when a run sets that option, as ``factory(None, services: HostServices)``; see
    ``ToolboxSpec`` for what it returns. Each function is a ``rlm_host.sdk.environments.Tool``, called on the host
    through the same bridge, approvals, timeout and ``tool_call`` record as the user's own ``--tool`` functions.
    """


# --------------------------------------------------------------------------------------------- the command line


@hookspec
def rlm_register_commands() -> list[CommandSpec]:
    """Sub-commands of ``rlm`` (the built-in ``run``, ``runs``, ``models``… come through this hook too).

    Listed by ``rlm --help`` from the record alone; ``app`` (a ``typer.Typer``, a click command or a plain
    function) is imported only when the sub-command runs or its own help is shown. A name taken by two
    distributions, a built-in included, is refused for both. Return the same records for the same installation:
    ``rlm --help`` shows them from a per-user cache, rebuilt whenever an install or a plugin's files change.
    """


@hookspec
def rlm_register_doctor_checks() -> list[DoctorCheck]:
    """Extra readiness checks shown by ``rlm plugins doctor`` (an engine reachable, a model file present…).

    Each ``check`` is called as ``check(settings)`` — the validated section the record's ``section`` names, or
    the whole loaded settings — and returns a ``Readiness``; one that raises counts as not ready.
    """
