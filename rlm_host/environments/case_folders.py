"""Coding benchmark cases kept as folders inside a plugin package, read as rlm-bench cases.

Each case is a folder ``<package>/cases/<case_id>/``: ``case.toml`` (``description``, ``task``, ``max_steps``,
``exec_timeout``, the ``presets`` it belongs to), ``starter/`` (the project folder's first files), ``hidden/``
(pytest files the benchmark runs in the sandbox after the run, never shown to the agent), and ``reference/`` /
``wrong/`` (a correct and a plausibly wrong solution, which the plugin's tests run against the hidden tests so
every case is known to tell them apart). rlm-env-dspy's ``dspy_quick`` and rlm-harness's ``coding_quick`` are
read this way.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

SKIPPED = {".keep", "__pycache__"}


@dataclass(frozen=True)
class CaseFolders:
    """The cases under ``<package>/cases``, run in ``environment``; ``tags`` are added to every case's own."""

    package: str
    environment: str
    tags: dict[str, str] = field(default_factory=dict)

    def ids(self, preset: str | None = None) -> list[str]:
        """The cases of ``preset`` (every case when None), in name order."""
        folders = sorted(self._root().iterdir(), key=lambda f: f.name)
        return [folder.name for folder in folders if folder.is_dir() and folder.joinpath("case.toml").is_file()
                and (preset is None or preset in _meta(folder).get("presets", []))]

    def files(self, case_id: str, part: str) -> dict[str, str]:
        """The files of one part of a case (``starter``, ``hidden``, ``reference``, ``wrong``): path → text."""
        root = self._root().joinpath(case_id, part)
        return dict(_walk(root, "")) if root.is_dir() else {}

    def case(self, case_id: str) -> dict[str, Any]:
        """The rlm-bench case of one folder (validated by rlm-bench as a ``BenchmarkCase``)."""
        meta = _meta(self._root().joinpath(case_id))
        return {"case_id": case_id, "description": meta.get("description", ""), "task": meta["task"].strip(),
                "environment": self.environment, "max_steps": int(meta.get("max_steps", 12)),
                "exec_timeout": float(meta.get("exec_timeout", 120)), "project": self.files(case_id, "starter"),
                "hidden_tests": self.files(case_id, "hidden"), "tags": dict(self.tags)}

    def preset(self, name: str) -> list[dict[str, Any]]:
        """Every case of preset ``name``, as rlm-bench cases."""
        return [self.case(case_id) for case_id in self.ids(name)]

    def _root(self) -> Traversable:
        return resources.files(self.package).joinpath("cases")


def _meta(folder: Traversable) -> dict[str, Any]:
    return tomllib.loads(folder.joinpath("case.toml").read_text(encoding="utf-8"))


def _walk(folder: Traversable, prefix: str) -> list[tuple[str, str]]:
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name in SKIPPED or entry.name.endswith(".pyc"):
            continue
        if entry.is_dir():
            found += _walk(entry, f"{prefix}{entry.name}/")
        else:
            found.append((prefix + entry.name, entry.read_text(encoding="utf-8")))
    return found
