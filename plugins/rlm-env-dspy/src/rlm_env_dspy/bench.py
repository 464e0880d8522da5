"""The ``dspy_quick`` and ``dspy_extended`` presets: DSPy coding tasks run in ``--env dspy``, scored by hidden tests.

Each case is a folder under ``cases/`` (``rlm_host.sdk.environments.CaseFolders`` says what it holds).
"""

from __future__ import annotations

from typing import Any

from rlm_host.sdk.environments import CaseFolders

from rlm_env_dspy import SANDBOX_PACKAGES

CASES = CaseFolders("rlm_env_dspy", "dspy", {"task_family": "dspy_coding", "framework_target": "dspy",
                                             "needs": "+".join(SANDBOX_PACKAGES)})
case_ids, case_files, as_case = CASES.ids, CASES.files, CASES.case


def dspy_quick(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return CASES.preset("dspy_quick")


def dspy_extended(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return CASES.preset("dspy_extended")
