"""Find plugin distributions from installed metadata, without importing any of them.

A plugin distribution declares one entry point in the ``rlm`` group pointing at its hookimpl module:

    [project.entry-points.rlm]
    my_plugin = "my_plugin.hooks"

``RLM_PLUGINS`` selects which distributions load: unset loads all, ``RLM_PLUGINS=`` (empty) none,
``RLM_PLUGINS=a,b`` only those. ``RLM_PLUGIN_MODULES=my_sink,tools.my_env`` also loads hook modules that are
importable but not packaged (a plugin being written, a module next to a notebook), like pytest's conftest.py.

The metadata is read by ``metadata_scan`` (the same answer as ``importlib.metadata``, at a tenth of the cost: every
``rlm`` start, ``--help`` included, pays for it), and by ``importlib.metadata`` when the installation is one that
module leaves to it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Callable, Union

from rlm_host.plugins import metadata_scan

ENTRY_POINT_GROUP = "rlm"
HOST_DISTRIBUTION = "rlm-host"


def canonical_dist_name(name: str) -> str:
    """PEP 503 normalisation, so ``RLM_PLUGINS=RLM_Sandbox.Docker`` finds ``rlm-sandbox-docker``."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class PluginDistribution:
    """One installed distribution that provides plugins, and what became of loading it.

    ``version_of`` is the version, or a function giving it: reading a distribution's metadata parses its
    METADATA file, which ``rlm --help`` never needs, so it happens on first use of ``version``.
    """

    name: str
    version_of: Union[str, Callable[[], str]]
    entry_points: list[tuple[str, str]] = field(default_factory=list)  # (entry name, "module[:attr]")
    builtin: bool = False
    status: str = "not loaded"  # "ok", "broken", "disabled" or "not loaded"
    errors: list[str] = field(default_factory=list)
    provides: dict[str, list[str]] = field(default_factory=dict)  # kind → component names
    load_ms: float = 0.0  # time spent importing its hook module: what it adds to every `rlm` start
    metadata_folder: str = ""  # its .dist-info / .egg-info folder, when known

    @property
    def version(self) -> str:
        if callable(self.version_of):
            self.version_of = self.version_of()
        return self.version_of

    def mark_broken(self, error: str) -> None:
        self.status = "broken"
        if error not in self.errors:
            self.errors.append(error)

    def as_dict(self) -> dict:
        return {"name": self.name, "version": self.version, "builtin": self.builtin, "status": self.status,
                "errors": list(self.errors), "entry_points": [f"{n} = {v}" for n, v in self.entry_points],
                "provides": {kind: sorted(names) for kind, names in sorted(self.provides.items()) if names},
                "load_ms": round(self.load_ms, 1)}


def discover() -> list[PluginDistribution]:
    """Every installed distribution with an ``rlm`` entry point, sorted by name; metadata only."""
    scanned = metadata_scan.scan(ENTRY_POINT_GROUP)
    if scanned is None:
        return _discover_with_importlib()
    found = []
    for dist in scanned:
        found.append(PluginDistribution(canonical_dist_name(dist.key), functools.partial(_version_in, dist.path),
                                        list(dict.fromkeys(dist.entry_points)), metadata_folder=dist.path))
    return sorted(found, key=lambda d: d.name)


def _discover_with_importlib() -> list[PluginDistribution]:
    """``discover()`` through ``importlib.metadata``, for installations ``metadata_scan`` leaves to it."""
    from importlib import metadata

    found: dict[str, PluginDistribution] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist
        # the name from the folder name when the standard library offers it: ``dist.name`` parses the whole METADATA
        # file, about 0.3 ms a plugin at every ``rlm`` start
        name = (getattr(dist, "_normalized_name", None) or dist.name) if dist is not None else ep.value.split(".")[0]
        dist_name = canonical_dist_name(name)
        version: Union[str, Callable[[], str]] = (lambda d=dist: d.version) if dist is not None else "unknown"
        folder = str(getattr(dist, "_path", ""))  # a PathDistribution's folder
        entry = found.setdefault(dist_name, PluginDistribution(dist_name, version, metadata_folder=folder))
        if (ep.name, ep.value) not in entry.entry_points:
            entry.entry_points.append((ep.name, ep.value))
    return sorted(found.values(), key=lambda d: d.name)


def _version_in(folder: str) -> str:
    """The version in a metadata folder; importlib.metadata reads it when the quick header scan finds none."""
    version = metadata_scan.version_in(folder)
    if version is None:
        from importlib import metadata
        from pathlib import Path

        version = metadata.PathDistribution(Path(folder)).version
    return version


def host_version() -> str:
    """The installed rlm-host version, or the source tree's when running uninstalled."""
    folder = metadata_scan.folder_of(HOST_DISTRIBUTION)
    version = metadata_scan.version_in(folder) if folder else None
    if version:
        return version
    from importlib import metadata

    try:
        return metadata.version(HOST_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
