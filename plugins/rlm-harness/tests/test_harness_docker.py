"""The harness in the Docker sandbox (a security boundary), the project folder mounted read-write: commands that
try to write outside the workdir change nothing on the host, files written inside belong to the user, the tests
run in the container, and a coding_quick case scores 1.0 through ``--mode harness``. Slow: it needs the engine
and the image with pytest (built once per machine)."""

from __future__ import annotations

import json
import os

import pytest

from harness_support import call, final
from rlm_harness import SANDBOX_PACKAGES
from rlm_harness.bench import case_files
from rlm_host.testing import ScriptedConnector, isolated_runner

from rlm_sandbox_docker.testing import docker_engine, prepare_image  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def image(docker_engine):
    return prepare_image(SANDBOX_PACKAGES)


@pytest.fixture
def runner(image, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins="rlm-harness,rlm-sandbox-docker,rlm-bench", sandbox="docker")


def steps_of(result):
    events = [json.loads(line) for line in open(result.trajectory_path)]
    return [e["data"] for e in events if e["type"] == "step"]


def test_commands_cannot_write_outside_the_workdir(runner, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    escape = tmp_path / "escape.txt"
    replies = [call("run_command", command=f"echo owned > ../escape.txt; echo owned > {escape}; "
                                           "echo owned > /etc/owned 2>&1; pwd; id -u"),
               call("run_command", command="echo inside > made.txt && ls"),
               call("run_tests"),
               final()]
    model = ScriptedConnector.from_responses(replies, name="scripted:harness")
    result = runner.run_task("Try to escape.", environment="harness", workdir=project,
                             connectors={"root": model, "sub": model}, max_steps=len(replies), exec_timeout=120)
    assert result.completed and result.sandbox == "docker", result.error
    steps = steps_of(result)
    escaping, inside, tests = (s["observation"] for s in steps[:3])
    assert not escape.exists() and not (project.parent / "escape.txt").exists(), "nothing written on the host"
    assert escaping["stdout"].splitlines()[0] == "/workspace"
    assert (project / "made.txt").read_text() == "inside\n" and inside["success"]
    assert (project / "made.txt").stat().st_uid == os.getuid(), "files written in the sandbox belong to the user"
    assert tests["passed"] and "1 passed" in tests["stdout"]


def test_a_coding_case_scores_one_through_the_harness_in_docker(runner):
    from rlm_bench.catalog import find_preset
    from rlm_bench.runner import BenchmarkRunner, BenchOptions

    reference = case_files("roman_numerals", "reference")["roman.py"]
    replies = [call("write_file", path="roman.py", content=reference), call("run_command", command="python3 -c "
               "'import roman; print(roman.to_roman(1994))'"), final("implemented")]
    model = ScriptedConnector.from_responses(replies, name="scripted:harness")
    bench = BenchmarkRunner(runner, connectors={"root": model, "sub": model})
    preset = find_preset("coding_quick", runner.host, [], loaded=runner.loaded)
    preset.cases = [c for c in preset.cases if c.case_id == "roman_numerals"]
    summary = bench.run(preset, BenchOptions(mode="harness", environment="harness", sandbox="docker"))
    case = summary.cases[0]
    assert case.environment == "harness" and case.score == 1.0 and case.correct, case.score_detail
