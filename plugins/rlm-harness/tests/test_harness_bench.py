"""The ``coding_quick`` preset and ``rlm bench run --mode harness``: every case's reference solution passes its hidden
tests and its wrong one fails them (pytest in a child process over our own case files), a scripted harness run that
writes the reference scores 1.0 in the sandbox, and ``--mode harness`` refuses another environment or framework."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from harness_support import call, final
from rlm_harness.bench import as_case, case_files, case_ids, coding_quick

PLUGINS = "rlm-harness,rlm-bench"


def test_the_preset_holds_three_harness_cases():
    cases = coding_quick()
    assert [c["case_id"] for c in cases] == ["fix_slugify", "roman_numerals", "top_words"]
    assert all(c["environment"] == "harness" and c["hidden_tests"] and c["project"] for c in cases)


@pytest.mark.parametrize("case_id", case_ids("coding_quick"))
def test_the_hidden_tests_tell_the_reference_from_the_wrong_solution(case_id, tmp_path):
    outcomes = {}
    for part in ("reference", "wrong"):
        folder = tmp_path / part
        for files in (case_files(case_id, "starter"), case_files(case_id, part), case_files(case_id, "hidden")):
            for relative, text in files.items():
                (folder / relative).parent.mkdir(parents=True, exist_ok=True)
                (folder / relative).write_text(text)
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."], cwd=folder,
                              capture_output=True, text=True, timeout=120)
        outcomes[part] = done.returncode
    assert outcomes == {"reference": 0, "wrong": 1}


def test_a_harness_benchmark_run_writes_the_reference_and_scores_one(rlm_cli, rlm_script):
    reference = case_files("fix_slugify", "reference")["textkit.py"]
    model = rlm_script([call("read_file", path="textkit.py"), call("write_file", path="textkit.py", content=reference),
                        final("slugify fixed")])
    result = rlm_cli("bench", "run", "-p", "coding_quick", "--mode", "harness", "--limit", "1", "--sandbox", "process",
                     "--model", model, "--json", "-q", plugins=PLUGINS)
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["mode"] == "harness" and summary["environment"] == "harness"
    case = summary["cases"][0]
    assert case["environment"] == "harness" and case["score"] == 1.0 and case["correct"], case
    assert case["score_detail"]["hidden_tests"] == {"passed": 4}


def test_the_dspy_presets_run_through_the_harness_too(rlm_cli, rlm_script):
    """``-p dspy_quick --mode harness``: the case's environment becomes the harness (scored 0 here: the scripted
    model does nothing, and this venv has no DSPy; what matters is that the harness ran it)."""
    model = rlm_script([final("nothing")])
    result = rlm_cli("bench", "run", "-p", "dspy_quick", "--mode", "harness", "--limit", "1", "--sandbox", "process",
                     "--model", model, "--json", "-q", plugins=f"{PLUGINS},rlm-env-dspy")
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["mode"] == "harness" and summary["environment"] == "harness"


def test_mode_harness_refuses_another_environment_or_framework(rlm_cli):
    for extra in (["--env", "dspy"], ["--framework", "pydantic-ai"]):
        result = rlm_cli("bench", "run", "-p", "coding_quick", "--mode", "harness", *extra, plugins=PLUGINS)
        assert result.code == 2 and "--mode harness runs every case in the harness environment" in result.err
    assert rlm_cli("bench", "run", "-p", "coding_quick", "--mode", "teleport", plugins=PLUGINS).code != 0


def test_as_case_is_a_valid_rlm_bench_case():
    case = as_case("roman_numerals")
    assert case["max_steps"] == 12 and "to_roman" in case["task"] and "roman.py" in case["project"]
