"""The in-sandbox analysis (``sandbox_analysis.py``): scores, reasons and findings on small sources.

The module is standard library only, so it is imported here directly; the tests that need DSPy installed
(the misused-API check against the real package) skip without it.
"""

from __future__ import annotations

import ast
import json
import sys
import textwrap
import types
from pathlib import Path

import pytest

from rlm_env_dspy import sandbox_analysis as sa

CASES = Path(sa.__file__).resolve().parent / "cases"

GOOD = '''\
"""Question answering."""

import dspy


class AnswerQuestion(dspy.Signature):
    """Answer the question from the context."""

    context: str = dspy.InputField(desc="the source text")
    question: str = dspy.InputField(desc="the question")
    answer: str = dspy.OutputField(desc="a short answer")


class QA(dspy.Module):
    """Reasons, then answers."""

    def __init__(self):
        super().__init__()
        self.generate = dspy.ChainOfThought(AnswerQuestion)

    def forward(self, context, question):
        return self.generate(context=context, question=question)
'''

STRING_SIGNATURE = '''\
"""Question answering."""

import dspy


class QA(dspy.Module):
    """Reasons, then answers."""

    def __init__(self):
        super().__init__()
        self.generate = dspy.ChainOfThought("context, question -> answer")

    def forward(self, context, question):
        return self.generate(context=context, question=question)
'''

PLAIN = '''\
"""Arithmetic helpers."""


def add(a, b):
    """The sum."""
    return a + b


class Counter:
    """Counts."""

    def __init__(self):
        self.n = 0
'''


def write(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")
    return name


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], **options) -> dict:
    monkeypatch.chdir(tmp_path)
    names = [write(tmp_path, name, text) for name, text in files.items()]
    options.setdefault("use_installed_dspy", False)
    return sa.analyze(names, **options)


def findings(report: dict, kind: str | None = None) -> list[dict]:
    return [f for file in report["files"] for f in file["findings"] if kind is None or f["kind"] == kind]


def test_the_module_is_standalone_standard_library_only() -> None:
    source = Path(sa.__file__).read_text(encoding="utf-8")
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports: the source runs on its own in the sandbox"
            imported.add((node.module or "").split(".")[0])
    assert imported - {"dspy"} <= set(sys.stdlib_module_names), imported
    top_level = {n.names[0].name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    assert "dspy" not in top_level, "dspy is imported lazily, inside a try"


def test_runs_as_source_text_like_in_the_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox executes the source then ``analyze([...])`` in one namespace (rlm_host.run_in_session)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "qa.py", GOOD)
    namespace: dict = {"__name__": "__main__"}
    source = Path(sa.__file__).read_text(encoding="utf-8")
    exec(compile(f"{source}\n__rlm_result = analyze(['qa.py'], use_installed_dspy=False)\n", "<sandbox>", "exec"),
         namespace)
    report = namespace["__rlm_result"]
    assert report["score"] == 100 and json.loads(json.dumps(report)) == report


def test_a_good_typed_program_scores_100_with_no_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = run(tmp_path, monkeypatch, {"qa.py": GOOD})
    assert report["score"] == 100 and report["reasons"] == []
    file = report["files"][0]
    assert file["dspy"] is True
    [signature] = file["signatures"]
    assert signature["style"] == "class" and signature["docstring"] and signature["typed"]
    assert [f["name"] for f in signature["inputs"]] == ["context", "question"]
    assert signature["outputs"] == [{"name": "answer", "type": "str", "desc": "a short answer"}]
    [module] = file["modules"]
    assert module["has_forward"] and module["predictors"] == [{"attr": "generate", "predictor": "ChainOfThought"}]
    assert report["summary"]["predictors"] == {"ChainOfThought": 1}


def test_a_typed_class_signature_scores_higher_than_a_string_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    typed = run(tmp_path, monkeypatch, {"typed.py": GOOD})
    string = run(tmp_path, monkeypatch, {"string.py": STRING_SIGNATURE})
    assert typed["score"] > string["score"]
    [signature] = string["files"][0]["signatures"]
    assert signature["style"] == "string" and not signature["typed"]
    assert [f["name"] for f in signature["inputs"]] == ["context", "question"]
    [reason] = string["reasons"]
    assert reason.startswith("string.py:11: -5 string signature 'context, question -> answer'")


def test_string_signatures_typed_malformed_and_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
        import dspy
        a = dspy.Predict("question: str -> answer: float")
        b = dspy.Predict("question -> answer")
        c = dspy.Predict("question -> answer")
        d = dspy.Predict("question -> answer")
        e = dspy.Predict("question answer")
        """
    report = run(tmp_path, monkeypatch, {"s.py": source})
    points = {f["line"]: f["points"] for f in findings(report, "signature")}
    assert points == {2: -3, 3: -5, 4: -5, 5: -2}  # typed, untyped, untyped, then the -15 cap
    [malformed] = findings(report, "misused_api")
    assert malformed["line"] == 6 and "malformed" in malformed["message"]


def test_signature_field_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = '''\
        """Signatures."""
        import dspy


        class Weak(dspy.Signature):
            question = dspy.InputField()
            answer: str = dspy.OutputField(prefix="Answer:", desc="")
            note: str


        class NoOutput(dspy.Signature):
            """Only inputs."""

            text: str = dspy.InputField(desc="a text")
        '''
    report = run(tmp_path, monkeypatch, {"sig.py": source})
    by_line = {}
    for f in findings(report):
        by_line.setdefault(f["line"], []).append((f["kind"], f["points"]))
    assert by_line[5] == [("signature", -5)]  # no docstring
    assert sorted(by_line[6]) == [("signature", -3), ("signature", -3)]  # untyped, no desc
    assert sorted(by_line[7]) == [("deprecated_api", -2), ("signature", -3)]  # prefix=, empty desc
    assert by_line[8] == [("signature", -10)]  # annotated, not a field: DSPy 3 raises at class creation
    assert by_line[11] == [("signature", -10)]  # no OutputField
    assert report["score"] == 100 - 5 - 6 - 5 - 10 - 10
    assert any("prefix=, deprecated since DSPy 3.2" in r for r in report["reasons"])


def test_module_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = '''\
        """Modules."""
        import dspy


        class NoForward(dspy.Module):
            """Nothing to run."""

            def __init__(self):
                super().__init__()
                self.p = dspy.Predict("q -> a")


        class Sloppy(dspy.Module):
            """Misuses its predictors."""

            def __init__(self):
                self.used = dspy.Predict("q -> a")
                self.unused = dspy.ChainOfThought("q -> a")

            def forward(self, q):
                first = self.used(q)
                self.used.forward(q=q)
                return first


        class NoLM(dspy.Module):
            """Never calls a model."""

            def forward(self, q):
                return dspy.Prediction(a=q)
        '''
    report = run(tmp_path, monkeypatch, {"mod.py": source})
    messages = {(f["line"], f["kind"], f["points"]): f["message"] for f in findings(report)}
    assert "NoForward defines no forward()" in messages[(5, "module", -20)]
    assert "super().__init__()" in messages[(16, "module", 0)]  # advice only: DSPy 3's metaclass covers it
    assert "self.unused" in messages[(18, "module", -5)]
    assert "positional arguments" in messages[(21, "misused_api", -10)]
    assert "self.used.forward(...) is called directly" in messages[(22, "misused_api", -3)]
    assert "never reaches an LM" in messages[(29, "module", -10)]
    assert [m["name"] for m in report["files"][0]["modules"]] == ["NoForward", "Sloppy", "NoLM"]


def test_removed_and_deprecated_apis_are_reported_with_their_line(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = '''\
        """Old DSPy."""
        import dspy
        from dspy.functional import TypedPredictor

        lm = dspy.OpenAI(model="gpt-3.5-turbo")
        dspy.settings.configure(lm=lm)
        dspy.configure(lm=dspy.OllamaLocal(model="llama2"))
        cot = dspy.ChainOfThoughtWithHint("question -> answer")
        pot = dspy.ProgramOfThought("question -> answer")
        retrieve = dspy.Retrieve(k=3)
        dspy.Assert(True, "always")
        more = dspy.OpenAI(model="gpt-4")
        print(TypedPredictor, cot, pot, retrieve, more)
        '''
    report = run(tmp_path, monkeypatch, {"old.py": source})
    found = {(f["line"], f["kind"]): f for f in findings(report) if f["kind"].endswith("_api") or f["kind"] == "style"}
    assert "dspy.functional (module) was removed in DSPy 2.6" in found[(3, "removed_api")]["message"]
    openai = found[(5, "removed_api")]
    assert openai["points"] == -15 and "dspy.LM(" in openai["message"] and "(also line 12)" in openai["message"]
    assert found[(6, "style")]["points"] == -2 and "dspy.configure" in found[(6, "style")]["message"]
    assert "dspy.OllamaLocal was removed in DSPy 2.6" in found[(7, "removed_api")]["message"]
    assert "removed in DSPy 3.0" in found[(8, "removed_api")]["message"]
    assert found[(9, "deprecated_api")]["points"] == -8 and "dspy.RLM" in found[(9, "deprecated_api")]["message"]
    assert found[(10, "legacy_api")]["points"] == -3
    assert "dspy.Assert was removed in DSPy 2.6" in found[(11, "removed_api")]["message"]
    assert "old.py:5: -15 dspy.OpenAI was removed in DSPy 2.6" in "\n".join(report["reasons"])


def test_an_unusable_optimizer_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = '"""Opt."""\nimport dspy\n\noptimizer = dspy.AvatarOptimizer(metric=len)\n'
    [finding] = findings(run(tmp_path, monkeypatch, {"opt.py": source}), "misused_api")
    assert finding["line"] == 4 and "dspy.TypedPredictor" in finding["message"]


def test_the_installed_version_decides_removed_or_deprecated() -> None:
    """A name the table says is removed costs less when the sandbox's (older) dspy still has it; a deprecated
    name that the sandbox's (newer) dspy no longer has costs the removed price."""
    old_dspy = types.ModuleType("dspy")
    old_dspy.OpenAI = type("OpenAI", (), {})
    source = "import dspy\nlm = dspy.OpenAI()\npot = dspy.ProgramOfThought('q -> a')\n"
    file = sa.analyze_source(source, "old.py", dspy_module=old_dspy, dspy_version="2.5.43")
    kinds = {f["line"]: (f["kind"], f["points"]) for f in file["findings"] if f["kind"].endswith("_api")}
    assert kinds == {2: ("deprecated_api", -8), 3: ("removed_api", -15)}
    assert any("still present in the installed 2.5.43" in f["message"] for f in file["findings"])


def test_deprecated_lm_interfaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = '''\
        """Custom LM."""
        import dspy


        class MyLM(dspy.BaseLM):
            """Old-style custom LM."""

            def forward(self, prompt=None, messages=None, **kwargs):
                return None


        lm = dspy.LM("openai/gpt-4o-mini")
        lm(messages=[{"role": "user", "content": "hi"}])
        lm("hi")
        '''
    report = run(tmp_path, monkeypatch, {"lm.py": source})
    lines = {f["line"]: f["points"] for f in findings(report, "deprecated_api")}
    assert lines == {8: -5, 13: -3}


def test_a_syntax_error_scores_0_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = run(tmp_path, monkeypatch, {"ok.py": PLAIN, "broken.py": '"""Broken."""\n\ndef f(:\n    pass\n'})
    broken = report["files"][1]
    assert broken["score"] == 0
    [finding] = broken["findings"]
    assert finding["kind"] == "syntax_error" and finding["line"] == 3
    assert report["score"] == 50
    assert report["reasons"][0] == "score 50 = mean of 2 file scores (ok.py 100, broken.py 0)"
    assert report["reasons"][1].startswith("broken.py:3: -100 syntax error")


def test_a_plain_python_file_is_judged_on_code_quality(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean = run(tmp_path, monkeypatch, {"clean.py": PLAIN})
    assert clean["score"] == 100 and clean["files"][0]["dspy"] is False and clean["files"][0]["signatures"] == []
    messy = '''\
        import os
        import sys
        from json import *


        def undocumented(items=[]):
            try:
                return items[0]
            except:
                return None


        class Thing:
            pass


        def _private():
            return sys.argv
        '''
    report = run(tmp_path, monkeypatch, {"messy.py": messy})
    reasons = "\n".join(report["reasons"])
    for expected in ("messy.py:1: -2 the file has no module docstring",
                     "messy.py:1: -1 `os` is imported but never used", "messy.py:3: -3 `from json import *`",
                     "messy.py:6: -3 public function undocumented has no",
                     "messy.py:6: -3 function undocumented has a mutable default", "messy.py:9: -3 bare `except:`",
                     "messy.py:13: -3 public class Thing has no docstring"):
        assert expected in reasons
    assert report["score"] == 100 - 2 - 1 - 3 - 3 - 3 - 3 - 3
    assert not findings(report, "signature") and not findings(report, "module")


def test_every_point_lost_has_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for case in sorted(CASES.iterdir()):
        for part in ("reference", "wrong", "starter"):
            for path in sorted((case / part).glob("*.py")) if (case / part).is_dir() else []:
                report = run(tmp_path, monkeypatch, {path.name: path.read_text(encoding="utf-8")})
                file = report["files"][0]
                lost = -sum(f["points"] for f in file["findings"])
                assert file["score"] == max(0, 100 - lost), path
                assert len(report["reasons"]) == sum(1 for f in file["findings"] if f["points"] < 0), path
                for finding in file["findings"]:
                    assert finding["message"] and isinstance(finding["line"], int)


def test_the_case_reference_solutions_score_well(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for case in sorted(p for p in CASES.iterdir() if (p / "case.toml").is_file()):
        for path in sorted((case / "reference").glob("*.py")):
            report = run(tmp_path, monkeypatch, {path.name: path.read_text(encoding="utf-8")})
            assert report["score"] >= 90, (case.name, report["reasons"])
            assert not [f for f in findings(report) if f["kind"].endswith("_api")], (case.name, report["reasons"])


def test_folders_missing_files_and_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    write(tmp_path / "pkg", "a.py", PLAIN)
    write(tmp_path / "pkg", "notes.txt", "not python")
    (tmp_path / "pkg" / "__pycache__").mkdir()
    write(tmp_path / "pkg" / "__pycache__", "b.py", "junk(")
    report = sa.analyze(["pkg", "missing.py"], use_installed_dspy=False)
    assert [f["path"] for f in report["files"]] == ["pkg/a.py", "missing.py"]
    assert report["files"][1]["score"] == 0 and "cannot read" in report["files"][1]["findings"][0]["message"]
    empty = sa.analyze([], use_installed_dspy=False)
    assert empty["score"] == 0 and empty["reasons"] == ["no Python files to analyse: score 0"]


def test_without_dspy_the_version_is_none_and_a_note_says_so(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    report = run(tmp_path, monkeypatch, {"qa.py": GOOD})
    assert report["dspy_version"] is None
    assert "misused-API check was skipped" in report["notes"][0]
    monkeypatch.setitem(sys.modules, "dspy", None)  # as in a sandbox without dspy: import dspy raises
    report = sa.analyze(["qa.py"])
    assert report["dspy_version"] is None and "not importable" in report["notes"][0] and report["score"] == 100

# The checks against an installed DSPy run where DSPy is installed, in the sandbox: test_dspy_docker.py.
