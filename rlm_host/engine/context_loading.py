"""Which context loader reads which file: the registered ``ContextLoaderSpec`` s by suffix, built once each."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from rlm_host.context import ContextLoader, LoaderLookup, load_context
from rlm_host.errors import InputError
from rlm_host.services import HostServices


def loader_lookup(host: Any, loaded: Any, home: Path) -> LoaderLookup:
    """``loader_for(path)``: the highest-priority loader claiming the file's suffix (the longest suffix first, so
    ``.tar.gz`` beats ``.gz``), else the catch-all loaders (no suffixes); each built once with its settings."""
    specs = list(host.context_loaders())
    built: dict[str, ContextLoader] = {}

    def build(spec: Any) -> ContextLoader:
        if spec.name not in built:
            ready = spec.readiness()
            if not ready.ok:  # e.g. its PDF library is missing: say so instead of failing mid-load
                raise InputError(f"the {spec.name!r} context loader cannot run here: {ready.detail}",
                                 hint=ready.hint or None)  # fmt: skip
            built[spec.name] = spec.create(loaded.component("context_loader", spec.name), HostServices(home=home))
        return built[spec.name]

    def loader_for(path: Path) -> Optional[ContextLoader]:
        name = path.name.lower()
        claiming = [s for s in specs if any(name.endswith(suffix) for suffix in s.suffixes)]
        if claiming:
            best = max(claiming, key=lambda s: (max(len(x) for x in s.suffixes if name.endswith(x)), s.priority))
            return build(best)
        fallback = [s for s in specs if not s.suffixes]
        return build(max(fallback, key=lambda s: s.priority)) if fallback else None

    return loader_for


def load_context_with_loaders(paths: list[str], host: Any, loaded: Any, home: Path, **options: Any) -> Any:
    """``load_context`` with the installed loaders (what ``rlm run --context`` and the Python API use)."""
    return load_context(paths, loader_for=loader_lookup(host, loaded, home), **options)
