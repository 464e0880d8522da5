"""The plugin host: loads plugin modules with their failures contained, and is the typed facade the core
uses to reach components (one method per kind; nothing else calls ``pm.hook``).

A plugin that fails to import, names a hook that does not exist, returns the wrong thing or raises in a hook
is marked broken with its error and a warning is logged; everything else keeps working. With
``RLM_STRICT_PLUGINS=1`` the same problems raise instead.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
import threading
import time
from typing import Any, Callable

import pluggy

from rlm_host import builtin, hookspecs, logs
from rlm_host.components import (
    RECORD_TYPES,
    BenchmarkPackSpec,
    CommandSpec,
    DoctorCheck,
    EnvironmentSpec,
    FrameworkSpec,
    ProviderSpec,
    SandboxSpec,
    SinkSpec,
)
from rlm_host.errors import PluginError
from rlm_host.plugins import discovery
from rlm_host.plugins.discovery import PluginDistribution
from rlm_host.plugins.registry import Registry

_HOOK_NAMES = frozenset(hookspecs.REGISTRATION_HOOKS)
_IMPL_MARK = f"{hookspecs.PROJECT}_impl"


class PluginHost:
    """Discovers and loads plugins once, then answers registry questions by kind."""

    def __init__(self, *, environ: dict[str, str] | None = None, include_builtins: bool = True) -> None:
        env = dict(os.environ if environ is None else environ)
        self.strict = discovery.strict_mode(env)
        self._selected = discovery.selected_names(env)
        self._include_builtins = include_builtins
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.distributions: list[PluginDistribution] = []
        self._owner: dict[str, PluginDistribution] = {}  # pluggy plugin name → its distribution
        self._registries: dict[str, Registry[Any]] = {}
        self._loaded = False
        self._lock = threading.RLock()

    # ----------------------------------------------------------------- loading

    def load(self) -> "PluginHost":
        """Register the built-ins, then import every selected plugin distribution's hook module."""
        with self._lock:
            if self._loaded:
                return self
            self._loaded = True
            if self._include_builtins:
                host = PluginDistribution(discovery.HOST_DISTRIBUTION, discovery.host_version(), builtin=True)
                host.entry_points.append(("builtin", builtin.__name__))
                self.distributions.append(host)
                self._register(host, builtin.__name__, builtin)
                host.status = "ok" if host.status == "not loaded" else host.status
            for dist in discovery.discover():
                if dist.name == discovery.HOST_DISTRIBUTION:
                    continue
                self.distributions.append(dist)
                if self._selected is not None and dist.name not in self._selected:
                    dist.status = "disabled"
                    continue
                started = time.perf_counter()
                for entry_name, value in dist.entry_points:
                    self._load_entry_point(dist, entry_name, value)
                dist.load_ms = (time.perf_counter() - started) * 1000
                if logs.enabled(logging.DEBUG):
                    logs.get_logger("rlm.plugins").debug("plugin loaded", plugin=dist.name, ms=round(dist.load_ms, 1))
                if dist.status == "not loaded":
                    dist.status = "ok"
            self._warn_unknown_selection()
            self.pm.check_pending()
            return self

    def _load_entry_point(self, dist: PluginDistribution, entry_name: str, value: str) -> None:
        module_name, _, attr = value.partition(":")
        try:
            obj: Any = importlib.import_module(module_name.strip())
            for part in filter(None, attr.strip().split(".")):
                obj = getattr(obj, part)
        except BaseException as exc:  # a plugin may raise anything at import, even SystemExit
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._broken(dist, f"import of {value!r} failed: {type(exc).__name__}: {exc}")
            return
        self._register(dist, f"{dist.name}:{entry_name}", obj)

    def _register(self, dist: PluginDistribution, plugin_name: str, obj: Any) -> None:
        unknown = sorted(
            name
            for name in dir(obj)
            if getattr(getattr(obj, name, None), _IMPL_MARK, None) is not None and name not in _HOOK_NAMES
        )
        for name in unknown:
            close = difflib.get_close_matches(name, sorted(_HOOK_NAMES), n=1)
            suggestion = f" (did you mean {close[0]!r}?)" if close else ""
            self._broken(dist, f"implements unknown hook {name!r}{suggestion}")
        if unknown:
            return
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
        logs.get_logger("rlm.plugins").warning(f"plugin {dist.name} is broken: {error} (see `rlm plugins doctor`)")

    def _by_name(self, dist_name: str) -> PluginDistribution:
        return next(d for d in self.distributions if d.name == dist_name)

    def _warn_unknown_selection(self) -> None:
        if not self._selected:
            return
        known = {d.name for d in self.distributions}
        for name in sorted(self._selected - known):
            logs.get_logger("rlm.plugins").warning(
                "RLM_PLUGINS names a distribution that is not installed", plugin=name, installed=sorted(known)
            )

    # ----------------------------------------------------------------- collection

    def _registry(self, hook_name: str) -> Registry[Any]:
        """Call one registration hook, implementation by implementation, so one failure stays contained."""
        self.load()
        with self._lock:
            if hook_name in self._registries:
                return self._registries[hook_name]
            kind = hookspecs.REGISTRATION_HOOKS[hook_name]
            record_type = RECORD_TYPES[kind]
            registry: Registry[Any] = Registry(kind)
            for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
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
                    if clash:  # both sides get the error: the name is unusable until one is removed
                        message, other = clash
                        self._broken(dist, message)
                        self._by_name(other).mark_broken(message)
                    else:
                        dist.provides.setdefault(kind, []).append(record.name)
            self._registries[hook_name] = registry
            return registry

    def collect_all(self) -> "PluginHost":
        """Run every registration hook (for listings and the doctor)."""
        for hook_name in hookspecs.REGISTRATION_HOOKS:
            self._registry(hook_name)
        return self

    # ----------------------------------------------------------------- the typed facade

    def environments(self) -> Registry[EnvironmentSpec]:
        return self._registry("rlm_register_environments")

    def frameworks(self) -> Registry[FrameworkSpec]:
        return self._registry("rlm_register_frameworks")

    def sandboxes(self) -> Registry[SandboxSpec]:
        return self._registry("rlm_register_sandboxes")

    def sinks(self) -> Registry[SinkSpec]:
        return self._registry("rlm_register_sinks")

    def benchmark_packs(self) -> Registry[BenchmarkPackSpec]:
        return self._registry("rlm_register_benchmark_packs")

    def providers(self) -> Registry[ProviderSpec]:
        return self._registry("rlm_register_providers")

    def commands(self) -> Registry[CommandSpec]:
        return self._registry("rlm_register_commands")

    def doctor_checks(self) -> Registry[DoctorCheck]:
        return self._registry("rlm_doctor_checks")

    def component_registries(self) -> dict[str, Registry[Any]]:
        """Registries of the six component kinds, keyed by kind (what config sections may name)."""
        getters: list[Callable[[], Registry[Any]]] = [
            self.environments,
            self.frameworks,
            self.sandboxes,
            self.sinks,
            self.benchmark_packs,
            self.providers,
        ]
        return {registry.kind: registry for registry in (get() for get in getters)}

    def broken(self) -> list[PluginDistribution]:
        return [d for d in self.distributions if d.status == "broken"]


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

