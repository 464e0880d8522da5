"""The ``dspy_quick`` and ``dspy_extended`` presets: DSPy coding tasks run in ``--env dspy``, scored by hidden tests.

Each case is a folder under ``cases/``: ``case.toml`` (description, task, max_steps, the presets it belongs to),
``starter/`` (the project folder's first files), ``hidden/`` (pytest files rlm-bench runs in the sandbox after
the run, never shown to the agent), and ``reference/`` / ``wrong/`` (a correct and a plausibly wrong solution,
which the plugin's tests run against the hidden tests so every case is known to tell them apart).
"""

from __future__ import annotations

import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from rlm_env_dspy import SANDBOX_PACKAGES

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
        "environment": "dspy", "max_steps": int(meta.get("max_steps", 12)),
        "exec_timeout": float(meta.get("exec_timeout", 120)),
        "project": case_files(case_id, "starter"), "hidden_tests": case_files(case_id, "hidden"),
        "tags": {"task_family": "dspy_coding", "framework_target": "dspy", "needs": "+".join(SANDBOX_PACKAGES)},
    }  # fmt: skip


def dspy_quick(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return [as_case(case_id) for case_id in case_ids("dspy_quick")]


def dspy_extended(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return [as_case(case_id) for case_id in case_ids("dspy_extended")]


def _cases_root() -> Traversable:
    return resources.files("rlm_env_dspy").joinpath("cases")


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
