"""The dspy environment for real: the Docker sandbox (a security boundary) with DSPy and pytest in its image, the
project folder mounted read-write, a scripted model. Then the coding benchmarks: every case's reference solution
passes its hidden tests inside the sandbox and its wrong solution fails them, and ``rlm bench run dspy_quick``
with a model that writes the reference scores 1.0 on every case."""

from __future__ import annotations

import json
import os

import pytest

from rlm_env_dspy import SANDBOX_PACKAGES
from rlm_env_dspy.bench import as_case, case_files, case_ids
from rlm_host.testing import ScriptedConnector, isolated_runner

from rlm_sandbox_docker.testing import docker_engine, prepare_image  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow

QA = '''"""A question-answering program."""
import dspy


class AnswerQuestion(dspy.Signature):
    """Answer the question in a few words."""

    question: str = dspy.InputField(desc="the question")
    answer: str = dspy.OutputField(desc="a short answer")


class QA(dspy.Module):
    def __init__(self):
        super().__init__()
        self.respond = dspy.Predict(AnswerQuestion)

    def forward(self, question: str):
        return self.respond(question=question)
'''
TEST_QA = '''import dspy
from dspy.utils import DummyLM

from qa import QA, AnswerQuestion


def test_signature_fields():
    assert list(AnswerQuestion.input_fields) == ["question"]
    assert list(AnswerQuestion.output_fields) == ["answer"]


def test_the_module_reasons_then_answers():
    lm = DummyLM([{"reasoning": "Paris is the capital.", "answer": "Paris"}])
    with dspy.context(lm=lm):
        prediction = QA()(question="Capital of France?")
    assert prediction.answer == "Paris" and prediction.reasoning == "Paris is the capital."
'''


@pytest.fixture(scope="module")
def image(docker_engine):
    return prepare_image(SANDBOX_PACKAGES)


@pytest.fixture
def runner(image, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins="rlm-env-dspy,rlm-env-generic,rlm-sandbox-docker,rlm-bench",
                           sandbox="docker")


def steps_of(result):
    events = [json.loads(line) for line in open(result.trajectory_path)]
    return [e["data"] for e in events if e["type"] == "step"]


def test_a_dspy_coding_task_end_to_end_in_docker(runner, tmp_path):
    project = tmp_path / "project"
    replies = [json.dumps(a) for a in [
        {"action": "write_file", "path": "qa.py", "content": QA},
        {"action": "write_file", "path": "tests/test_qa.py", "content": TEST_QA},
        {"action": "patch_file", "path": "qa.py", "search": "dspy.Predict(AnswerQuestion)",
         "replace": "dspy.ChainOfThought(AnswerQuestion)"},
        {"action": "analyze_dspy", "path": "qa.py"},
        {"action": "run_python", "code": "import dspy, os; print(dspy.__version__, os.getcwd())"},
        {"action": "final", "final_response": "QA uses ChainOfThought; its tests pass"},
    ]]
    model = ScriptedConnector.from_responses(replies, name="scripted:dspy")
    result = runner.run_task("Write a ChainOfThought QA module with tests.", environment="dspy", workdir=project,
                             connectors={"root": model, "sub": model}, max_steps=len(replies), exec_timeout=120)
    assert result.completed and result.sandbox == "docker", result.error
    steps = steps_of(result)
    assert [s["action"] for s in steps] == ["write_file", "write_file", "patch_file", "analyze_dspy", "run_python",
                                            "final"]
    write, tests, patch, analysis, python = (s["observation"] for s in steps[:5])
    assert write["verifier"]["compile"] is True and write["dspy_patterns"][:2] == ["imports dspy", "dspy.Signature"]
    assert tests["verifier"]["tests"] is False, "Predict gives no reasoning: the test written second fails"
    assert patch["verifier"]["tests"] is True and patch["verifier"]["tests_run"]["counts"] == {"passed": 2}
    assert 0 <= analysis["report"]["score"] <= 100 and analysis["report"]["dspy_version"]
    assert python["success"] and python["stdout"].split()[1] == "/workspace"
    assert steps[2]["reward"] > steps[1]["reward"] > 0 - 1
    assert (project / "qa.py").stat().st_uid == os.getuid(), "files written in the sandbox belong to the user"


@pytest.mark.parametrize("case_id", case_ids("dspy_extended"))
def test_hidden_tests_pass_the_reference_and_fail_the_wrong_solution(runner, tmp_path, case_id):
    from rlm_bench.projects import prepare_project, score_hidden_tests

    hidden = case_files(case_id, "hidden")
    verdicts = {}
    for part in ("reference", "wrong", "starter"):
        files = {**case_files(case_id, "starter"), **(case_files(case_id, part) if part != "starter" else {})}
        folder = prepare_project(tmp_path / part, files)
        verdicts[part] = score_hidden_tests(runner, folder, hidden, environment="dspy", sandbox="docker")
    assert verdicts["reference"][:2] == (1.0, True), verdicts["reference"][2]["output"]
    wrong_score, wrong_correct, wrong_detail = verdicts["wrong"]
    assert not wrong_correct and 0 < wrong_score < 1.0, wrong_detail["output"]  # wrong, yet not a broken run
    assert not verdicts["starter"][1], "the untouched project must not already solve the case"


MISUSED = '''"""Uses real and invented DSPy names."""
import dspy
from dspy.utils import DummyLM
from dspy import NoSuchPredictor

lm = dspy.LM("openai/gpt-4o-mini")
model = dspy.settings.lm
optimizer = dspy.teleprompt.BootstrapFewShot
bad = dspy.ChainOfThot("question -> answer")
worse = dspy.Predict.no_such_method
print(DummyLM, NoSuchPredictor, lm, model, optimizer, bad, worse)
'''


def test_the_analysis_checks_names_against_the_dspy_in_the_sandbox(runner, tmp_path):
    """Misused APIs are found against the sandbox's DSPy; its removed/deprecated tables agree with that version;
    every case's reference solution is clean."""
    from rlm_env_dspy import verifier

    project = tmp_path / "project"
    project.mkdir()
    (project / "names.py").write_text(MISUSED)
    references = []
    for case_id in case_ids():
        for path, text in case_files(case_id, "reference").items():
            (project / case_id).mkdir(exist_ok=True)
            (project / case_id / path).write_text(text)
            references.append(f"{case_id}/{path}")
    session = runner.open_sandbox(environment="dspy", workspace=project)
    with session:
        report = verifier.analyze(session, ["names.py"], timeout=120)
        version = report["dspy_version"]
        misused = {f["line"]: f["message"] for file in report["files"] for f in file["findings"]
                   if f["kind"] == "misused_api"}
        assert misused == {4: f"dspy.NoSuchPredictor does not exist in the installed dspy {version}",
                           9: f"dspy.ChainOfThot does not exist in the installed dspy {version}",
                           10: f"dspy.Predict.no_such_method does not exist in the installed dspy {version}"}
        table = _tables_against_dspy(session)
        assert table["removed_but_present"] == [] and table["deprecated_missing"] == [], table
        clean = verifier.analyze(session, references, timeout=120)
        api = [f for file in clean["files"] for f in file["findings"] if f["kind"].endswith("_api")]
        assert api == [] and clean["dspy_version"] == version, clean["reasons"]


def _tables_against_dspy(session):
    """Names the analysis lists as removed that the sandbox's DSPy still has (for its version), and deprecated
    names it lacks."""
    from rlm_env_dspy import verifier
    from rlm_host.sdk.sandbox import run_in_session

    code = verifier.analysis_source() + '''
def _check_tables():
    import dspy
    version = tuple(int(p) for p in dspy.__version__.split(".")[:2])
    removed = [n for n, (since, _) in REMOVED.items()
               if version >= tuple(int(p) for p in since.split(".")) and hasattr(dspy, n)]
    deprecated = [n for n in DEPRECATED if version < (3, 5) and not hasattr(dspy, n)]
    return {"removed_but_present": removed, "deprecated_missing": deprecated}
'''
    return run_in_session(session, code, "_check_tables()", timeout=60)


def test_bench_run_dspy_quick_scores_a_model_that_writes_the_reference(runner):
    from rlm_bench.catalog import find_preset
    from rlm_bench.runner import BenchmarkRunner, BenchOptions

    replies = []
    for case_id in case_ids("dspy_quick"):
        for path, text in case_files(case_id, "reference").items():
            replies.append(json.dumps({"action": "write_file", "path": path, "content": text}))
        replies.append(json.dumps({"action": "final", "final_response": f"{case_id} done"}))
    model = ScriptedConnector.from_responses(replies, name="scripted:reference")
    preset = find_preset("dspy_quick", runner.host, loaded=runner.loaded)
    assert [c.case_id for c in preset.cases] == case_ids("dspy_quick") and len(preset.cases) == 3
    assert all(c.hidden_tests == as_case(c.case_id)["hidden_tests"] for c in preset.cases)
    summary = BenchmarkRunner(runner, connectors={"root": model, "sub": model}).run(preset, BenchOptions())
    assert [(c.case_id, c.scorer, c.score, c.correct) for c in summary.cases] == [
        (case_id, "hidden_tests", 1.0, True) for case_id in case_ids("dspy_quick")]
    assert all(c.environment == "dspy" and c.sandbox == "docker" for c in summary.cases)
