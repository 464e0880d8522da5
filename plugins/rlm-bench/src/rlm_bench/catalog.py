"""Finding presets: the ones packs register through the benchmark pack hook, and those of ``--pack`` files.

A preset named in a ``--pack`` file wins over a registered one of the same name (the user asked for that
file). Registered names resolve with their aliases and a "did you mean" on a typo.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from pydantic import ValidationError

from rlm_bench.cases import BenchmarkCase
from rlm_host import HostServices, PluginError, RlmError


@dataclass
class Preset:
    """A named list of cases and where it came from (the distribution registering it, or a file path)."""

    name: str
    description: str
    source: str
    cases: list[BenchmarkCase] = field(default_factory=list)
    pack_file: Optional[str] = None


def _registered(host: Any, name: str, loaded: Any) -> Preset:
    registry = host.benchmark_packs()
    spec = registry.get(name)
    owner = registry.owner(name)
    settings = loaded.component("benchmark", spec.name) if loaded is not None else None
    services = HostServices(home=loaded.home) if loaded is not None else HostServices()
    try:
        raw = spec.create(settings, services)
    except RlmError:
        raise
    except Exception as exc:  # a plugin's pack factory failing is the plugin's error, reported clearly
        raise PluginError(f"benchmark pack {spec.name!r} ({owner}) failed to build its cases: "
                          f"{type(exc).__name__}: {exc}") from None
    try:
        cases = [c if isinstance(c, BenchmarkCase) else BenchmarkCase.model_validate(c) for c in raw]
    except (ValidationError, TypeError) as exc:
        raise PluginError(f"benchmark pack {spec.name!r} ({owner}) returned an invalid case: {exc}") from None
    return Preset(spec.name, spec.description, owner, cases)


def _from_files(pack_files: Iterable[str | Path]) -> list[Preset]:
    from rlm_bench.external import load_pack_file

    presets = []
    for path in pack_files:
        for preset in load_pack_file(path):
            presets.append(Preset(preset.name, preset.description, str(preset.source), preset.cases,
                                  str(preset.source)))
    return presets


def find_preset(name: Optional[str], host: Any, pack_files: Iterable[str | Path] = (), loaded: Any = None) -> Preset:
    """The preset ``name``: from the pack files first, else registered. With no name, a pack file's only preset.

    ``loaded`` (the run's ``LoadedSettings``) gives a pack factory its ``[benchmark.<name>]`` section and home.
    """
    external = _from_files(pack_files)
    if name is None:
        if len(external) == 1:
            return external[0]
        raise RlmError("no preset given", hint="pass --preset NAME (`rlm bench list` shows them)")
    wanted = name.strip().lower().replace("-", "_")
    for preset in external:
        if preset.name.lower().replace("-", "_") == wanted:
            return preset
    return _registered(host, name, loaded)


def list_presets(host: Any, pack_files: Iterable[str | Path] = (), loaded: Any = None) -> list[Preset]:
    """Every registered preset, then those of the pack files (cases built, contexts not)."""
    presets = []
    for spec in host.benchmark_packs():
        try:
            presets.append(_registered(host, spec.name, loaded))
        except RlmError as exc:
            presets.append(Preset(spec.name, f"(broken: {exc.message})", "error"))
    return presets + _from_files(pack_files)
