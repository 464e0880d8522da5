"""The ``coding_quick`` preset: small general Python tasks in a project folder, run in the ``harness`` environment
and scored by hidden tests in the sandbox (by rlm-bench, after the run).

Each case is a folder under ``cases/``: ``case.toml`` (description, task, max_steps, the presets it belongs to),
``starter/`` (the project folder's first files), ``hidden/`` (pytest files rlm-bench runs in a fresh sandbox
session after the run, never shown to the agent), and ``reference/`` / ``wrong/`` (a correct and a plausibly
wrong solution: the plugin's tests check the hidden tests tell them apart). The hidden tests use plain asserts
(no pytest import), so the cases run in any sandbox that has pytest.

``rlm bench run -p coding_quick --mode harness`` runs them through the harness; ``--mode native --env dspy``
through another file-editing environment, side by side.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from rlm_harness import SANDBOX_PACKAGES

SKIPPED = {".keep", "__pycache__"}


def case_ids(preset: str | None = None) -> list[str]:
    """The cases of ``preset`` (every case when None), in name order."""
    found = []
    for folder in sorted(_cases_root().iterdir(), key=lambda f: f.name):
        if folder.is_dir() and folder.joinpath("case.toml").is_file():
            if preset is None or preset in _meta(folder).get("presets", []):
                found.append(folder.name)
    return found


def case_files(case_id: str, part: str) -> dict[str, str]:
    """The files of one part of a case (``starter``, ``hidden``, ``reference``, ``wrong``): relative path → text."""
    root = _cases_root().joinpath(case_id, part)
    return dict(_walk(root, "")) if root.is_dir() else {}


def as_case(case_id: str) -> dict[str, Any]:
    """The rlm-bench case of one folder (validated by rlm-bench as a ``BenchmarkCase``)."""
    meta = _meta(_cases_root().joinpath(case_id))
    return {
        "case_id": case_id, "description": meta.get("description", ""), "task": meta["task"].strip(),
        "environment": "harness", "max_steps": int(meta.get("max_steps", 12)),
        "exec_timeout": float(meta.get("exec_timeout", 120)),
        "project": case_files(case_id, "starter"), "hidden_tests": case_files(case_id, "hidden"),
        "tags": {"task_family": "coding", "needs": "+".join(SANDBOX_PACKAGES)},
    }  # fmt: skip


def coding_quick(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return [as_case(case_id) for case_id in case_ids("coding_quick")]


def _cases_root() -> Traversable:
    return resources.files("rlm_harness").joinpath("cases")


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
