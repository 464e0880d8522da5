"""Every dspy_quick / dspy_extended case tells a correct solution from a plausibly wrong one.

For each case folder: ``starter/`` then ``reference/`` (or ``wrong/``) over it go into a fresh project folder,
``hidden/`` into ``_rlm_hidden_tests/`` inside it (as rlm-bench lays it out), and pytest runs there in a
subprocess, offline: the reference must pass every hidden test, the wrong solution must fail at least one.

It needs an interpreter with dspy: in the main venv (no dspy) the module is skipped. To run it::

    python3 -m venv /tmp/dspy-venv && /tmp/dspy-venv/bin/pip install dspy pytest
    PYTHONPATH=plugins/rlm-env-dspy/src /tmp/dspy-venv/bin/python -m pytest \\
        plugins/rlm-env-dspy/tests/test_cases_offline.py -p no:cacheprovider
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("dspy")

CASES = Path(__file__).resolve().parents[1] / "src" / "rlm_env_dspy" / "cases"
HIDDEN_DIR = "_rlm_hidden_tests"  # rlm_bench.projects.HIDDEN_DIR
PRESETS = {"dspy_quick": 3, "dspy_extended": 5}
CASE_IDS = sorted(p.name for p in CASES.iterdir() if (p / "case.toml").is_file())


def case_meta(case_id: str) -> dict:
    return tomllib.loads((CASES / case_id / "case.toml").read_text(encoding="utf-8"))


def copy_part(case_id: str, part: str, target: Path) -> None:
    source = CASES / case_id / part
    if not source.is_dir():
        return
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.name != ".keep" and "__pycache__" not in path.parts:
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)


def run_hidden_tests(case_id: str, solution: str, project: Path) -> subprocess.CompletedProcess:
    project.mkdir(parents=True)
    copy_part(case_id, "starter", project)
    copy_part(case_id, solution, project)
    copy_part(case_id, "hidden", project / HIDDEN_DIR)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "DSPY_CACHEDIR": str(project.parent / "dspy-cache")})
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=no", "--rootdir", ".",
            HIDDEN_DIR]  # fmt: skip
    return subprocess.run(argv, cwd=project, env=env, capture_output=True, text=True, timeout=300)


def counts(output: str) -> dict[str, int]:
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|errors?)", line)]
    return {word.rstrip("s"): int(n) for n, word in re.findall(r"(\d+) (passed|failed|errors?)", lines[-1])} \
        if lines else {}  # fmt: skip


def test_presets_hold_the_expected_cases() -> None:
    by_preset = {preset: [c for c in CASE_IDS if preset in case_meta(c).get("presets", [])] for preset in PRESETS}
    for preset, size in PRESETS.items():
        assert len(by_preset[preset]) == size, (preset, by_preset[preset])
    assert set(by_preset["dspy_quick"]) <= set(by_preset["dspy_extended"])


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_case_folder_is_complete(case_id: str) -> None:
    meta = case_meta(case_id)
    assert meta["description"].strip() and meta["task"].strip()
    assert 1 <= int(meta["max_steps"]) <= 40
    for part in ("starter", "hidden", "reference", "wrong"):
        assert (CASES / case_id / part).is_dir(), part
    hidden = sorted((CASES / case_id / "hidden").glob("test_*.py"))
    assert hidden, "no hidden test file"
    for path in hidden:
        text = path.read_text(encoding="utf-8")
        assert "dspy.configure(" not in text, "hidden tests use dspy.context(lm=DummyLM(...)), not global state"
    for name in (CASES / case_id / "reference").rglob("*.py"):
        assert name.name in meta["task"] or str(name.relative_to(CASES / case_id / "reference")) in meta["task"]


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_reference_passes_every_hidden_test(case_id: str, tmp_path: Path) -> None:
    result = run_hidden_tests(case_id, "reference", tmp_path / "project")
    found = counts(result.stdout)
    assert result.returncode == 0 and found.get("passed", 0) >= 3 and not found.get("failed"), \
        result.stdout[-4000:] + result.stderr[-2000:]  # fmt: skip


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_wrong_solution_fails_a_hidden_test(case_id: str, tmp_path: Path) -> None:
    result = run_hidden_tests(case_id, "wrong", tmp_path / "project")
    found = counts(result.stdout)
    assert result.returncode == 1, result.stdout[-4000:] + result.stderr[-2000:]
    assert found.get("failed", 0) >= 1 and found.get("passed", 0) >= 1, found  # wrong, yet not a broken run


@pytest.mark.parametrize("case_id", CASE_IDS)
def test_starter_alone_does_not_pass(case_id: str, tmp_path: Path) -> None:
    """The untouched project (the starter files only) must not already solve the case."""
    result = run_hidden_tests(case_id, "starter", tmp_path / "project")
    assert result.returncode != 0, result.stdout[-4000:]
