"""The ``coding_quick`` preset: small general Python tasks in a project folder, run in the ``harness`` environment
and scored by hidden tests in the sandbox (by rlm-bench, after the run).

Each case is a folder under ``cases/`` (``rlm_host.sdk.environments.CaseFolders`` says what it holds). The hidden
tests use plain asserts (no pytest import), so the cases run in any sandbox that has pytest.

``rlm bench run -p coding_quick --mode harness`` runs them through the harness; ``--mode native --env dspy``
through another file-editing environment, side by side.
"""

from __future__ import annotations

from typing import Any

from rlm_host.sdk.environments import CaseFolders

from rlm_harness import SANDBOX_PACKAGES

CASES = CaseFolders("rlm_harness", "harness", {"task_family": "coding", "needs": "+".join(SANDBOX_PACKAGES)})
case_ids, case_files, as_case = CASES.ids, CASES.files, CASES.case


def coding_quick(settings: Any = None, services: Any = None) -> list[dict[str, Any]]:
    return CASES.preset("coding_quick")
