"""Whole presets end to end: the benchmark runner drives the real engine (process sandbox) with scripted models
whose rules answer each case correctly or wrongly on purpose, so every aggregated number is known exactly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import rlm_host

from bench_data import make_runner, repl
from rlm_bench import packs
from rlm_bench.catalog import Preset
from rlm_bench.generators import generate
from rlm_bench.runner import BenchmarkInterrupted, BenchmarkRunner, BenchOptions
from rlm_bench.store import BenchStore
from rlm_bench.summary import BenchmarkSummary, percentile
from rlm_host.testing import ScriptedConnector


def preset(name: str) -> Preset:
    return Preset(name, packs.PRESETS[name], "builtin", getattr(packs, name)())


def scripted(rules, **kwargs) -> ScriptedConnector:
    return ScriptedConnector.from_responses([], rules=rules, name="scripted:bench", **kwargs)


def context_rules() -> list[dict]:
    """pure_rlm_context: the needle and the two hops found by real code, a count 2 off, a wrong letter."""
    product = generate("multidoc", {"tokens": 32768, "docs": 48, "hops": 2, "seed": 5}).meta["chain"]["product"]
    hop1 = (f"import re\nhits = [re.search(r'The {product} is manufactured by ([^.]+)\\.', d) for d in context]\n"
            "company = [h.group(1) for h in hits if h][0]\nprint('company=' + company)")
    hop2 = ("hits = [re.search(re.escape(company) + r' was founded in \\d+ by ([^.]+)\\.', d) for d in context]\n"
            "FINAL([h.group(1) for h in hits if h][0])")
    return [
        {"match": "Ashgrove ledger", "text": repl(
            "import re\nFINAL(re.search(r'magic number for the Ashgrove ledger is (\\d+)', context).group(1))")},
        {"match": "category 'human being'", "text": repl("print(len(context.splitlines()))\nFINAL(227)")},
        {"match": "Who founded", "text": repl(hop1)},
        {"match": "company=", "text": repl(hop2)},
        {"match": "default value of the parameter", "text": repl("print(list_files()[:2])\nFINAL('B')")},
    ]


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return make_runner(tmp_path)


def test_whole_preset_end_to_end_with_exact_aggregates(runner, tmp_path):
    model = scripted(context_rules())
    seen = []
    bench = BenchmarkRunner(runner, connectors={"root": model, "sub": model},
                            on_case=lambda r, d, t: seen.append((d, t)))
    summary = bench.run(preset("pure_rlm_context"), BenchOptions(sandbox="process", concurrency=2))
    cases = {c.case_id: c for c in summary.cases}
    assert [c.case_id for c in summary.cases] == ["ctx_niah_64k", "ctx_oolong_count_32k", "ctx_multidoc_32k",
                                                  "ctx_code_default_32k"]
    assert {k: (c.status, c.final_response, c.score) for k, c in cases.items()} == {
        "ctx_niah_64k": ("completed", "3516507", 1.0),
        "ctx_oolong_count_32k": ("completed", "227", 0.5625),
        "ctx_multidoc_32k": ("completed", "Ithgorel Isdelbel", 1.0),
        "ctx_code_default_32k": ("completed", "B", 0.0),
    }
    assert cases["ctx_multidoc_32k"].steps == 2 and cases["ctx_multidoc_32k"].reward == pytest.approx(1.8)
    m = summary.metrics
    assert (m.cases, m.completed, m.completion_rate, m.errors, m.scored, m.correct) == (4, 4, 1.0, 0, 4, 2)
    assert m.accuracy == pytest.approx((1 + 0.5625 + 1 + 0) / 4)
    assert m.avg_steps == pytest.approx(5 / 4) and m.avg_reward == pytest.approx((1 + 1 + 1.8 + 1) / 4)
    assert m.tokens.total == sum(c.tokens.total for c in summary.cases) > 0 and m.cost == 0.0
    durations = [c.duration_s for c in summary.cases]
    assert m.latency_s.p50 == pytest.approx(percentile(durations, 50), abs=1e-6) and m.latency_s.max == max(durations)
    assert summary.by_pack["pure_rlm_context"].accuracy == m.accuracy
    family = summary.by_tag["task_family"]
    assert {k: v.accuracy for k, v in family.items()} == {"code_mcq": 0.0, "multidoc": 1.0, "niah": 1.0,
                                                          "oolong": 0.5625}
    buckets = summary.by_tag["length_bucket"]
    assert buckets["64K"].accuracy == 1.0 and buckets["32K"].accuracy == pytest.approx((0.5625 + 1 + 0) / 3, abs=1e-6)
    assert sorted(seen) == [(1, 4), (2, 4), (3, 4), (4, 4)]
    # the summary file is the model, re-readable; each case was saved on its own
    store = BenchStore(tmp_path / ".rlm")
    assert BenchmarkSummary.model_validate_json(store.summary_path(summary.benchmark_id).read_text()) == summary
    assert set(store.load_cases(summary.benchmark_id)) == set(cases)
    assert all(c.trajectory_path and c.run_id for c in summary.cases)
    # each run carries the benchmark's labels, so a sink can group the runs of one benchmark
    first = json.loads(Path(cases["ctx_niah_64k"].trajectory_path).read_text().splitlines()[0])
    assert first["data"]["settings"]["labels"] == {"benchmark_id": summary.benchmark_id, "preset": summary.preset,
                                                   "case": "ctx_niah_64k"}
    assert cases["ctx_niah_64k"].context_tokens == 65535 and cases["ctx_niah_64k"].tags["length_bucket"] == "64K"


def test_paradigms_native_codeact_and_direct_in_one_preset(runner):
    needle = re.escape("magic number for the Saltmarsh survey is ")
    code = f"import re\nFINAL(re.search(r'{needle}(\\d+)', context).group(1))"
    rules = [
        {"match": "^Context:", "text": "4118146"},  # direct: the whole context is in the prompt
        {"match": "^Task: ", "text": json.dumps({"action": "run_python", "code": code})},  # generic (CodeAct)
        {"match": "Your query: ", "text": repl("print(len(context))\nFINAL('1234567')")},  # pure RLM, wrong on purpose
    ]
    model = scripted(rules, context_window=65_536)  # the 32K-token context fits the direct prompt whole
    summary = BenchmarkRunner(runner, connectors={"root": model}).run(preset("paradigm_comparison"),
                                                                      BenchOptions(sandbox="process"))
    rows = {c.case_id: (c.mode, c.environment, c.score, c.steps) for c in summary.cases}
    assert rows == {"paradigm_pure_rlm": ("native", "pure_rlm", 0.0, 1),
                    "paradigm_codeact": ("native", "generic", 1.0, 1),
                    "paradigm_dspy_rlm": ("native", "pure_rlm", 0.0, 0),
                    "paradigm_pydantic_ai": ("native", "pure_rlm", 0.0, 0),
                    "paradigm_google_adk": ("native", "pure_rlm", 0.0, 0),
                    "paradigm_deepagents": ("native", "pure_rlm", 0.0, 0),
                    "paradigm_adk_rlm": ("native", "pure_rlm", 0.0, 0),
                    "paradigm_direct": ("direct-llm", "direct-llm", 1.0, 1)}
    missing = {c.case_id: c.error for c in summary.cases if c.status == "error"}
    assert missing == {"paradigm_dspy_rlm": "framework 'dspy-rlm' is not installed (pip install rlm-adapter-…)",
                       "paradigm_pydantic_ai": "framework 'pydantic-ai' is not installed (pip install rlm-adapter-…)",
                       "paradigm_google_adk": "framework 'google-adk' is not installed (pip install rlm-adapter-…)",
                       "paradigm_deepagents": "framework 'deepagents' is not installed (pip install rlm-adapter-…)",
                       "paradigm_adk_rlm": "framework 'adk-rlm' is not installed (pip install rlm-adapter-…)"}
    assert {k: v.accuracy for k, v in summary.by_tag["paradigm"].items()} == {
        "codeact": 1.0, "direct": 1.0, "pure_rlm": 0.0, "dspy_rlm": 0.0, "pydantic_ai": 0.0, "google_adk": 0.0,
        "deepagents": 0.0, "adk_rlm": 0.0}
    direct = next(c for c in summary.cases if c.mode == "direct-llm")
    assert direct.notes == [] and direct.tokens.input > 32000 and direct.llm_calls == 1


def test_direct_llm_baseline_truncates_to_the_window_and_loses_the_needle(runner):
    rules = [{"match": r"Copperfield inventory is (\d+)", "text": "6330221"},
             {"match": "Question:", "text": "not found"}]
    model = scripted(rules, context_window=32_768)
    summary = BenchmarkRunner(runner, connectors={"root": model}).run(preset("token_efficiency"),
                                                                      BenchOptions(mode="direct-llm"))
    rows = {c.case_id: (c.score, c.context_tokens) for c in summary.cases}
    assert rows == {"tokens_niah_8k": (1.0, 8191), "tokens_niah_128k": (0.0, 131071),
                    "tokens_niah_1m": (0.0, 1_099_999)}
    assert summary.metrics.accuracy == pytest.approx(1 / 3) and summary.mode == "direct-llm"
    assert summary.by_tag["length_bucket"][">1M"].accuracy == 0.0
    notes = {c.case_id: c.notes for c in summary.cases}
    assert notes["tokens_niah_8k"] == [] and "context truncated for direct-llm" in notes["tokens_niah_1m"][0]
    assert all(len(call[1]["content"]) < 32_768 * 4 for call in model.calls)  # every prompt fits the window


def test_interrupted_benchmark_resumes_without_redoing_finished_cases(runner, tmp_path):
    class Interrupting(ScriptedConnector):
        """Raises KeyboardInterrupt (as Ctrl-C would) on the second case's first call."""

        def complete(self, messages, **kwargs):
            if "first word" in messages[-1]["content"]:
                raise KeyboardInterrupt
            return super().complete(messages, **kwargs)

    rules = [
        {"match": "How many characters", "text": repl("FINAL(len(context))")},
        {"match": "first word", "text": repl("FINAL(context.split()[0])")},
        {"match": "lantern", "text": repl("import re\nFINAL(len(re.findall(r'\\blantern\\b', context, re.I)))")},
    ]
    first = Interrupting([], rules, name="scripted:bench")
    bench = BenchmarkRunner(runner, connectors={"root": first})
    with pytest.raises(BenchmarkInterrupted) as stopped:
        bench.run(preset("pure_rlm_smoke"), BenchOptions(sandbox="process"))
    bench_id = stopped.value.benchmark_id
    assert (stopped.value.done, stopped.value.total) == (1, 3) and f"--resume {bench_id}" in stopped.value.hint
    store = BenchStore(tmp_path / ".rlm")
    assert set(store.load_cases(bench_id)) == {"smoke_length"} and not store.summary_path(bench_id).exists()
    assert len(first.calls) == 1  # the interrupted second case raised before recording; the third never started

    second = scripted(rules)
    summary = BenchmarkRunner(runner, connectors={"root": second}).resume(bench_id)
    asked = [call[-1]["content"] for call in second.calls]
    assert not any("How many characters" in a for a in asked)  # the finished case was not run again
    assert len(asked) == 2 and summary.resumed_cases == 1 and summary.benchmark_id == bench_id
    assert [c.case_id for c in summary.cases] == ["smoke_length", "smoke_first_word", "smoke_word_count"]
    assert summary.metrics.accuracy == 1.0 and summary.metrics.completed == 3


def test_a_case_that_cannot_be_built_is_an_error_result_and_setup_errors_stop_the_run(runner, tmp_path):
    from rlm_bench.cases import BenchmarkCase, ContextSpec

    cases = [BenchmarkCase(case_id="missing", task="t", context=ContextSpec.file(tmp_path / "nope.txt"), expected="x"),
             BenchmarkCase(case_id="fine", task="say ok", expected="ok")]
    model = scripted([{"match": "say ok", "text": repl("FINAL('ok')")}])
    summary = BenchmarkRunner(runner, connectors={"root": model}).run(Preset("p", "", "test", cases),
                                                                      BenchOptions(sandbox="process"))
    missing, fine = summary.cases
    assert missing.status == "error" and "cannot read context file" in missing.error and missing.score == 0.0
    assert fine.score == 1.0 and summary.metrics.errors == 1 and summary.metrics.accuracy == 0.5
    with pytest.raises(rlm_host.UnknownComponentError, match="unknown sandbox"):
        BenchmarkRunner(runner, connectors={"root": model}).run(Preset("p", "", "test", cases[1:]),
                                                                BenchOptions(sandbox="nope"))


def test_judge_scored_cases_use_the_judge_model(runner):
    from rlm_bench.cases import BenchmarkCase

    case = BenchmarkCase(case_id="j", task="How long was the trip?", expected="19 days", scorer="judge",
                         tags={"question_type": "temporal-reasoning"})
    root = scripted([{"match": "How long", "text": repl("FINAL('18 days')")}])
    judge = scripted([{"match": "off-by-one", "text": "yes"}])
    summary = BenchmarkRunner(runner, connectors={"root": root, "judge": judge}).run(
        Preset("j", "", "test", [case]), BenchOptions(sandbox="process"))
    (result,) = summary.cases
    assert result.score == 1.0 and result.score_detail["question_type"] == "temporal-reasoning"
    assert result.score_detail["raw"] == "yes" and len(judge.calls) == 1


def test_token_efficiency_native_over_a_million_tokens_keeps_the_prompt_flat(runner):
    code = "import re\nFINAL(re.search(r'Copperfield inventory is (\\d+)', context).group(1))"
    model = scripted([{"match": "Copperfield inventory", "text": repl(code)}])
    summary = BenchmarkRunner(runner, connectors={"root": model}).run(preset("token_efficiency"),
                                                                      BenchOptions(sandbox="process"))
    rows = {c.case_id: (c.score, c.tags["length_bucket"], c.context_tokens) for c in summary.cases}
    assert rows == {"tokens_niah_8k": (1.0, "8K", 8191), "tokens_niah_128k": (1.0, "128K", 131071),
                    "tokens_niah_1m": (1.0, ">1M", 1_099_999)}
    prompts = [c.tokens.input for c in summary.cases]
    assert max(prompts) - min(prompts) < 10  # the context stays in the sandbox: the root prompt does not grow


def test_the_summary_schema_is_stable():
    """The leaderboard and the HTML report read these fields: changing them is a schema_version bump."""
    from rlm_bench.summary import SCHEMA_VERSION, Aggregate, CaseResult, TokenTotals

    assert SCHEMA_VERSION == 2
    assert set(BenchmarkSummary.model_fields) == {
        "schema_version", "benchmark_id", "preset", "source", "description", "pack_file", "mode", "framework",
        "environment", "model", "sub_model", "sandbox", "judge_model", "instructions", "started_at", "finished_at",
        "host_version",
        "cases_planned", "resumed_cases", "metrics", "by_pack", "by_tag", "cases"}
    assert set(Aggregate.model_fields) == {
        "cases", "completed", "completion_rate", "errors", "scored", "accuracy", "correct", "avg_reward", "avg_steps",
        "avg_tokens", "tokens", "cost", "latency_s"}
    assert set(TokenTotals.model_fields) == {"input", "output", "total", "root", "sub"}  # OpenTelemetry's names
    assert {"case_id", "status", "score", "correct", "expected", "final_response", "tags", "context_tokens", "cost",
            "duration_s", "model", "mode", "sandbox"} <= set(CaseResult.model_fields)
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([1.0, 2.0, 3.0, 4.0], 95) == pytest.approx(3.85)


def test_coding_cases_are_scored_by_hidden_tests_in_a_fresh_sandbox(runner, tmp_path):
    """A case's project files are the run's starting folder; its hidden tests, written only after the run, score
    what the run left: the fraction passed, correct when all pass. The agent's own reply is not scored."""
    from rlm_bench.cases import BenchmarkCase

    hidden = {"test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\n"
                              "def test_zero():\n    assert add(0, 0) == 0\n"}
    cases = [BenchmarkCase(case_id=name, task="Make add() correct.", environment="generic", max_steps=1,
                           project={"calc.py": f"def add(a, b):\n    return {body}\n"}, hidden_tests=hidden)
             for name, body in (("right", "a + b"), ("wrong", "a - b"))]
    model = scripted([{"match": "Make add", "text": '{"action": "final", "final_response": "done, trust me"}'}])
    summary = BenchmarkRunner(runner, connectors={"root": model, "sub": model}).run(
        Preset("coding", "hidden tests", "test", cases), BenchOptions(sandbox="process"))
    right, wrong = summary.cases
    assert (right.scorer, right.score, right.correct) == ("hidden_tests", 1.0, True)
    assert (wrong.score, wrong.correct) == (0.5, False), "one of the two hidden tests passes by accident (0 + 0)"
    assert wrong.score_detail["hidden_tests"] == {"failed": 1, "passed": 1}
    assert "assert -1 == 5" in wrong.score_detail["output"]
    project = BenchStore(runner.home).root / summary.benchmark_id / "projects" / "wrong"
    assert (project / "calc.py").is_file() and (project / "_rlm_hidden_tests" / "test_calc.py").is_file()
