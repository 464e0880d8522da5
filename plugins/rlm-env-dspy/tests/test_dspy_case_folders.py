"""Every dspy_quick / dspy_extended case folder is complete and well-formed (no DSPy needed).

That each case tells a correct solution from a plausibly wrong one is checked where DSPy is installed, inside
the Docker sandbox with the hidden tests laid out as rlm-bench lays them out: test_dspy_docker.py.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parents[1] / "src" / "rlm_env_dspy" / "cases"
PRESETS = {"dspy_quick": 3, "dspy_extended": 5}
CASE_IDS = sorted(p.name for p in CASES.iterdir() if (p / "case.toml").is_file())


def case_meta(case_id: str) -> dict:
    return tomllib.loads((CASES / case_id / "case.toml").read_text(encoding="utf-8"))


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
