"""The plugin host: loads plugin modules with their failures contained, and is the typed facade the core
uses to reach components (one method per kind; nothing else calls ``pm.hook``).

A plugin that fails to import, names a hook that does not exist, returns the wrong thing or raises in a hook
is marked broken with its error and a warning is logged; everything else keeps working. With
``RLM_STRICT_PLUGINS=1`` the same problems raise instead.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import types
from typing import Any

import pluggy

from rlm_host import hookspecs, logs
from rlm_host.components import (KIND_BY_HOOK, KINDS, BenchmarkPackSpec, CommandSpec, ContextLoaderSpec, DoctorCheck,
                                  EnvironmentSpec, ExporterSpec, FrameworkSpec, ProviderSpec, SandboxSpec, SinkSpec,
                                  ToolboxSpec, import_object)
from rlm_host.errors import PluginError
from rlm_host.plugins import discovery
from rlm_host.plugins.discovery import PluginDistribution
from rlm_host.plugins.registry import Registry
from rlm_host.text import did_you_mean, is_truthy

#: The host's own components: ordinary plugin modules, registered by name before any distribution's.
DEFAULT_PLUGINS: tuple[str, ...] = ("rlm_host.default_plugins.builtin",)
_HOOK_NAMES = frozenset(KIND_BY_HOOK)
#: hookimpl options that mean nothing for a registration hook (it has nothing to wrap): refused, not ignored.
_REFUSED_OPTIONS = ("wrapper", "hookwrapper")


class PluginHost:
    """Discovers and loads plugins once, then answers registry questions by kind."""

    def __init__(self, *, environ: dict[str, str] | None = None) -> None:
        env = dict(os.environ if environ is None else environ)
        self.from_process_environment = environ is None  # what a cached command listing may stand for
        self.load_started_ns = 0  # time.time_ns() when load() began
        # RLM_PLUGINS: the distributions to load (unset: all; empty: none); RLM_PLUGIN_MODULES: unpackaged hook
        # modules to load too; RLM_STRICT_PLUGINS=1: a broken plugin is an error (see rlm_host.plugins.discovery)
        selected = env.get("RLM_PLUGINS")
        self._selected = None if selected is None else \
            {discovery.canonical_dist_name(part) for part in selected.split(",") if part.strip()}
        self._local_modules = [part.strip() for part in env.get("RLM_PLUGIN_MODULES", "").split(",") if part.strip()]
        self.strict = is_truthy(env.get("RLM_STRICT_PLUGINS"))
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.distributions: list[PluginDistribution] = []
        self._owner: dict[str, PluginDistribution] = {}  # pluggy plugin name → its distribution
        self._registries: dict[str, Registry[Any]] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- loading

    def load(self) -> "PluginHost":
        """Register the default plugins, then import every selected plugin distribution's hook module."""
        with self._lock:
            if self._loaded:
                return self
            self._loaded = True
            self.load_started_ns = time.time_ns()
            defaults = [(module.rpartition(".")[2], module) for module in DEFAULT_PLUGINS]
            self._load_distribution(PluginDistribution(discovery.HOST_DISTRIBUTION, discovery.host_version, defaults,
                                                       builtin=True))
            for dist in discovery.discover():
                if dist.name == discovery.HOST_DISTRIBUTION:
                    continue
                if self._selected is not None and dist.name not in self._selected:
                    dist.status = "disabled"
                    self.distributions.append(dist)
                    continue
                started = time.perf_counter()
                self._load_distribution(dist)
                dist.load_ms = (time.perf_counter() - started) * 1000
                if logs.enabled(logging.DEBUG):
                    logs.get_logger("rlm.plugins").debug("plugin loaded", plugin=dist.name, ms=round(dist.load_ms, 1))
            for module_name in self._local_modules:  # RLM_PLUGIN_MODULES: hook modules not packaged
                self._load_distribution(PluginDistribution(f"local:{module_name}", "unpackaged",
                                                           entry_points=[(module_name, module_name)]))
            known = {d.name for d in self.distributions}
            for name in sorted((self._selected or set()) - known):
                logs.get_logger("rlm.plugins").warning("RLM_PLUGINS names a distribution that is not installed",
                                                       plugin=name, installed=sorted(known))
            return self

    def _load_distribution(self, dist: PluginDistribution) -> None:
        """Import and register each hook module of ``dist``: one that fails marks it broken, the others still load."""
        self.distributions.append(dist)
        for entry_name, value in dist.entry_points:
            try:
                obj = import_object(value)
            except BaseException as exc:  # a plugin may raise anything at import, even SystemExit
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self._broken(dist, f"import of {value!r} failed: {type(exc).__name__}: {exc}")
                continue
            self._register(dist, f"{dist.name}:{entry_name}", obj)
        dist.status = "ok" if dist.status == "not loaded" else dist.status

    def _register(self, dist: PluginDistribution, plugin_name: str, obj: Any) -> None:
        """Register ``obj``'s hook implementations with pluggy. One that names an unknown hook ("did you mean") or
        asks for an option a registration hook cannot honour marks the plugin broken and is left out; the
        plugin's other hooks are registered and keep working."""
        hooks: dict[str, Any] = {}
        problems: list[str] = []
        for name in dir(obj):
            try:
                opts = self.pm.parse_hookimpl_opts(obj, name)
            except Exception:  # an attribute that raises on access is no hook
                continue
            if opts is None:
                continue
            hook = opts.get("specname") or name
            if hook not in _HOOK_NAMES:
                problems.append(f"implements unknown hook {hook!r}{did_you_mean(hook, sorted(_HOOK_NAMES))}")
                continue
            refused = [f"{hook}: @hookimpl({option}=True) is not supported by registration hooks"
                       for option in _REFUSED_OPTIONS if opts.get(option)]
            problems += refused
            if not refused:
                hooks[name] = getattr(obj, name)
        if problems:  # the plugin's other hooks are registered alone
            obj = types.SimpleNamespace(**hooks)
            for problem in problems:
                self._broken(dist, problem)
        try:
            self.pm.register(obj, name=plugin_name)
        except Exception as exc:
            self._broken(dist, f"hook validation failed: {exc}")
            return
        self._owner[plugin_name] = dist

    def _broken(self, dist: PluginDistribution, error: str) -> None:
        dist.mark_broken(error)
        if self.strict:
            raise PluginError(f"plugin {dist.name} is broken: {error}", hint="unset RLM_STRICT_PLUGINS to continue")
        logs.get_logger("rlm.plugins").warning("plugin broken", plugin=dist.name, error=error,
                                              hint="see `rlm plugins doctor`")

    def _by_name(self, dist_name: str) -> PluginDistribution:
        return next(d for d in self.distributions if d.name == dist_name)

    # ----------------------------------------------------------------- collection

    def _registry(self, hook_name: str) -> Registry[Any]:
        """Call one registration hook, implementation by implementation, so one failure stays contained."""
        self.load()
        with self._lock:
            if hook_name in self._registries:
                return self._registries[hook_name]
            kind = KIND_BY_HOOK[hook_name].name
            record_type = KIND_BY_HOOK[hook_name].record
            registry: Registry[Any] = Registry(kind)
            for impl in _in_call_order(getattr(self.pm.hook, hook_name).get_hookimpls()):
                dist = self._owner[impl.plugin_name]
                try:
                    records = impl.function()
                except Exception as exc:
                    self._broken(dist, f"{hook_name}() raised {type(exc).__name__}: {exc}")
                    continue
                if records is None:
                    continue
                if not isinstance(records, (list, tuple)) or not all(isinstance(r, record_type) for r in records):
                    self._broken(dist, f"{hook_name}() must return a list of {record_type.__name__}")
                    continue
                for record in records:
                    clash = registry.add(record, dist.name)
                    if clash:  # both plugins get the error: the name is unusable until one is removed
                        message, other = clash
                        self._broken(dist, message)
                        if not self._by_name(other).builtin:  # the host itself is not broken by a plugin
                            self._by_name(other).mark_broken(message)
                    else:
                        dist.provides.setdefault(kind, []).append(record.name)
            if kind == "provider":  # what prices and hints need to know of each provider, by name
                from rlm_host.models import catalog

                for record, _ in registry.items():
                    catalog.learn(record)
            self._registries[hook_name] = registry
            return registry

    def collect_all(self) -> "PluginHost":
        """Run every registration hook (for listings and the doctor)."""
        for kind in KINDS:
            self._registry(kind.hook)
        return self

    def registry(self, kind: str) -> Registry[Any]:
        """The registry of one kind by its name (``"sandbox"``…); the typed methods below are the same."""
        return self._registry(next(k.hook for k in KINDS if k.name == kind))

    # ----------------------------------------------------------------- the typed facade (one method per kind)

    def environments(self) -> Registry[EnvironmentSpec]: return self._registry("rlm_register_environments")
    def frameworks(self) -> Registry[FrameworkSpec]: return self._registry("rlm_register_frameworks")
    def sandboxes(self) -> Registry[SandboxSpec]: return self._registry("rlm_register_sandboxes")
    def sinks(self) -> Registry[SinkSpec]: return self._registry("rlm_register_sinks")
    def context_loaders(self) -> Registry[ContextLoaderSpec]: return self._registry("rlm_register_context_loaders")
    def benchmark_packs(self) -> Registry[BenchmarkPackSpec]: return self._registry("rlm_register_benchmark_packs")
    def providers(self) -> Registry[ProviderSpec]: return self._registry("rlm_register_providers")
    def exporters(self) -> Registry[ExporterSpec]: return self._registry("rlm_register_exporters")
    def toolboxes(self) -> Registry[ToolboxSpec]: return self._registry("rlm_register_toolboxes")
    def commands(self) -> Registry[CommandSpec]: return self._registry("rlm_register_commands")
    def doctor_checks(self) -> Registry[DoctorCheck]: return self._registry("rlm_register_doctor_checks")

    def component_registries(self) -> dict[str, Registry[Any]]:
        """Registries of the configurable kinds, keyed by kind (what config sections may name)."""
        return {kind.name: self._registry(kind.hook) for kind in KINDS if kind.configurable}

    def broken(self) -> list[PluginDistribution]:
        return [d for d in self.distributions if d.status == "broken"]


def _in_call_order(impls: list[Any]) -> list[Any]:
    """Implementations in registration order (the default plugins first), ``tryfirst`` ones before and
    ``trylast`` ones after the rest."""
    return sorted(impls, key=lambda impl: 0 if impl.tryfirst else 2 if impl.trylast else 1)


_HOST: PluginHost | None = None
_HOST_LOCK = threading.Lock()


def get_host() -> PluginHost:
    """The process-wide plugin host, loaded on first use."""
    global _HOST
    with _HOST_LOCK:
        if _HOST is None:
            _HOST = PluginHost()
    return _HOST.load()


def reset_host(host: PluginHost | None = None) -> None:
    """Replace (or drop) the process-wide host; for tests and for embedding with a custom environment."""
    global _HOST
    with _HOST_LOCK:
        _HOST = host
