"""``rlm bench`` as a user runs it: list, run (generated contexts, real answers), resume, compare gates, report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench_data import BENCH, DATA, RLM_SCRIPT, SMOKE_RULES, repl, write_script
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)
from rlm_bench.store import BenchStore
from rlm_bench.summary import BenchmarkSummary


def test_list_shows_every_preset_and_json_carries_the_answers(cli):
    code, out, _ = cli("bench", "list")
    assert code == 0
    for name in ("dspy_reading_quick", "oolong_style", "token_efficiency", "dynamic_web_filtering"):
        assert name in out
    code, out, _ = cli("bench", "list", "--json", "--pack", str(DATA / "evals.yaml"))
    presets = {p["name"]: p for p in json.loads(out)}
    assert presets["capitals"]["cases"][0]["expected"] == "Kasrin"
    oolong = {c["case_id"]: c for c in presets["oolong_style"]["cases"]}
    assert oolong["oolong_count_32k"]["expected"] == 147
    assert oolong["oolong_count_32k"]["context"]["generator"] == "oolong"


def test_run_oolong_style_builds_contexts_from_generators_and_scores_real_answers(cli, work):
    write_script(work / "oolong.json", [
        {"match": r"category 'location'\? Answer", "text": repl("print(len(context.splitlines()))") + "\nFINAL(149)"},
        {"match": "the most common", "text": repl("print(context[:200])\nFINAL('location')")},
        {"match": "more common than, less", "text": repl("FINAL('more common than')")},
        {"match": "List all pairs", "text": repl("FINAL('(18819, 34391), (18819, 37332), (1, 2)')")},
    ])
    code, out, err = cli("bench", "run", "--preset", "oolong_style", "--model", "scripted:oolong.json",
                         "--sandbox", "process", "--concurrency", "2", "--json")
    assert code == 0, err
    summary = BenchmarkSummary.model_validate_json(out)
    scores = {c.case_id: c.score for c in summary.cases}
    pairs_f1 = 2 * (2 / 3) * (2 / 21) / (2 / 3 + 2 / 21)  # 2 of 3 predicted pairs right, 21 expected
    assert scores == pytest.approx({"oolong_count_32k": 0.75 ** 2, "oolong_most_common_128k": 1.0,
                                    "oolong_compare_128k": 0.0, "oolong_pairs_32k": pairs_f1})
    assert summary.metrics.accuracy == pytest.approx((0.5625 + 1 + 0 + pairs_f1) / 4, abs=1e-6)
    tokens = {c.case_id: c.context_tokens for c in summary.cases}
    assert 32_000 < tokens["oolong_count_32k"] <= 32_768 and 130_000 < tokens["oolong_compare_128k"] <= 131_072
    expected = {c.case_id: c.expected for c in summary.cases}
    assert expected["oolong_count_32k"] == 147 and expected["oolong_compare_128k"] == "less common than"
    assert summary.model == "scripted:oolong.json" and summary.sandbox == "process"
    # progress on stderr: the mark follows the score (partly right, right, wrong), not only "it ran"
    assert "◐ oolong_count_32k  completed  score 0.562" in err and "✓ oolong_most_common_128k" in err
    assert "✗ oolong_compare_128k  completed  score 0.000" in err and "4/4" in err
    assert Path(work / ".rlm" / "benchmarks" / f"{summary.benchmark_id}.json").is_file()


def test_run_an_external_pack_in_direct_llm_mode_with_a_limit(cli, work):
    write_script(work / "direct.json", [{"match": "Velmora", "text": "Kasrin"}, {"match": "Isjor", "text": "Corfi"}])
    code, out, err = cli("bench", "run", "--pack", str(DATA / "evals.yaml"), "--mode", "direct-llm",
                         "--model", "scripted:direct.json", "--limit", "2")
    assert code == 0, err
    assert "mean score 0.500 · correct 1/2 (full score)" in out and "capital_velmora" in out and "structured" not in out


def test_interrupted_run_resumes_from_the_cli(cli, work, monkeypatch):
    from rlm_bench import runner as bench_runner

    write_script(work / "smoke.json", SMOKE_RULES)
    real = bench_runner.BenchmarkRunner.run_case

    def interrupt_second(self, case, manifest, cancel):
        if case.case_id == "smoke_first_word":
            raise KeyboardInterrupt
        return real(self, case, manifest, cancel)

    monkeypatch.setattr(bench_runner.BenchmarkRunner, "run_case", interrupt_second)
    code, _, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--model", "scripted:smoke.json", "--sandbox", "process")
    assert code == 130 and "interrupted: 1 of 3 cases finished and saved" in err
    bench_id = err.split("--resume ")[1].split()[0]
    store = BenchStore(work / ".rlm")
    saved = store.case_path(bench_id, "smoke_length").read_text()
    monkeypatch.setattr(bench_runner.BenchmarkRunner, "run_case", real)
    code, out, err = cli("bench", "run", "--resume", bench_id, "--json")
    assert code == 0, err
    summary = BenchmarkSummary.model_validate_json(out)
    assert summary.resumed_cases == 1 and summary.metrics.accuracy == 1.0 and "resuming: 1 of 3" in err
    assert store.case_path(bench_id, "smoke_length").read_text() == saved  # not run again
    code, _, err = cli("bench", "run", "--resume", "bench_nope")
    assert code == 2 and "no benchmark 'bench_nope' to resume" in err


def test_compare_fails_on_an_injected_regression_and_report_formats(cli, work):
    write_script(work / "good.json", SMOKE_RULES)
    regressed = [
        {"match": "How many characters", "text": repl("print('still looking')")},  # never answers: incomplete
        {"match": "still looking", "text": repl("print('still looking')")},
        {"match": "used all your steps", "text": "no idea"},
        {"match": "first word", "text": repl("FINAL('Harbours')")},  # wrong
        SMOKE_RULES[2],
    ]
    write_script(work / "bad.json", regressed)
    common = ("--preset", "pure_rlm_smoke", "--sandbox", "process", "-q")
    assert cli("bench", "run", *common, "--model", "scripted:good.json")[0] == 0
    assert cli("bench", "run", *common, "--model", "scripted:bad.json")[0] == 0
    code, out, err = cli("bench", "compare", "latest", "previous")
    assert code == 1
    # the looping case earns more step reward (4 × 0.8) than one final answer: only accuracy and completion see it
    assert "FAILED" in out and "gates failed: completion, steps, completion_regressions, accuracy" in err
    code, out, _ = cli("bench", "compare", "latest", "previous", "--json")
    comparison = json.loads(out)
    assert comparison["passed"] is False
    assert comparison["metrics"]["accuracy"]["delta"] == pytest.approx(-2 / 3, abs=1e-6)
    kinds = sorted((c["case_id"], c["kind"]) for c in comparison["changes"])
    assert kinds == [("smoke_first_word", "score_regression"), ("smoke_length", "completion_regression"),
                     ("smoke_length", "score_regression")]
    code, out, err = cli("bench", "compare", "previous", "latest")  # the good run against the bad one …
    assert code == 1 and "gates failed: reward" in err  # … has less step reward (fewer steps taken)
    code, out, _ = cli("bench", "compare", "previous", "latest", "--min-reward-delta", "-5")
    assert code == 0 and "PASSED" in out
    store = BenchStore(work / ".rlm")
    good, bad = (str(p) for p in store.summaries())
    assert cli("bench", "compare", good, good)[0] == 0  # paths work too

    code, out, _ = cli("bench", "report", "latest", "--baseline", "previous")
    assert code == 0 and out.startswith("# Benchmark ") and "## Comparison with" in out and "**FAIL**" in out
    assert "| `smoke_first_word` | completed | 0.000 | Harbours | Lighthouses |" in out
    code, out, _ = cli("bench", "report", "latest", "--format", "csv")
    rows = out.strip().splitlines()
    assert rows[0].startswith("case_id,preset,mode") and len(rows) == 4
    assert ",input_tokens,output_tokens,total_tokens," in rows[0]
    code, out, _ = cli("bench", "report", "previous", "--format", "json", "--baseline", "latest")
    payload = json.loads(out)
    assert payload["schema_version"] == 2 and payload["comparison"]["gates"][0] == {
        "name": "reward", "passed": False, "value": -0.733333, "threshold": 0.0, "rule": "avg_reward delta ≥ threshold"}
    code, _, err = cli("bench", "report", "latest", "--format", "md", "--output", str(work / "r.md"))
    assert code == 0 and (work / "r.md").read_text().startswith("# Benchmark")


def test_a_gate_across_different_cases_is_refused_unless_allowed(cli, work):
    """``rlm bench compare latest previous`` across two presets compares nothing: refused (exit 2) unless
    ``--allow-different-cases`` (it once passed, exit 0, with a note)."""
    write_script(work / "good.json", SMOKE_RULES)
    common = ("--sandbox", "process", "-q", "--model", "scripted:good.json")
    assert cli("bench", "run", "--preset", "pure_rlm_smoke", *common)[0] == 0
    cli("bench", "run", "--preset", "generic_smoke", *common)  # its cases fail: a benchmark of another preset
    code, out, err = cli("bench", "compare", "latest", "previous")
    assert code == 2 and out == "", out
    assert "(preset generic_smoke)" in err and "(preset pure_rlm_smoke)" in err and "0 in common" in err, err
    assert "hint: compare two benchmarks of one preset, or pass --allow-different-cases" in err
    code, out, err = cli("bench", "compare", "latest", "previous", "--allow-different-cases")
    assert code in (0, 1) and "different presets (generic_smoke vs pure_rlm_smoke)" in out, err
    assert cli("bench", "run", "--preset", "pure_rlm_smoke", "--limit", "1", *common)[0] == 0
    store = BenchStore(work / ".rlm")
    full, _, one = (str(p) for p in store.summaries())
    code, _, err = cli("bench", "compare", one, full)  # one preset, but --limit 1 ran one case of three
    assert code == 2 and "1 in common; only in the baseline:" in err, err


def test_clear_errors(cli):
    code, _, err = cli("bench", "run", "--preset", "oolong-styl")
    assert code == 2 and "unknown benchmark 'oolong-styl' (did you mean 'oolong_style'?)" in err
    code, _, err = cli("bench", "compare", "latest", "previous")
    assert code == 2 and "no latest benchmark" in err
    code, _, err = cli("bench", "run", "--preset", "pure_rlm_smoke", "--mode", "fast")
    assert code == 1 and "unknown mode 'fast'" in err
    # --mode harness: every case in the harness environment (rlm-harness; its tests run it), no other --env
    code, _, err = cli("bench", "run", "--preset", "pure_rlm_smoke", "--mode", "harness", "--env", "generic")
    assert code == 2 and "--mode harness runs every case in the harness environment" in err


@pytest.mark.slow
def test_a_killed_benchmark_resumes_without_redoing_finished_cases(isolated_env):
    """A real kill -9 of `rlm bench run` in the middle, then `--resume`."""
    work = Path(isolated_env["WORK"])
    pack = work / "slow.jsonl"
    pack.write_text("".join(json.dumps({"id": f"case_{i}", "task": f"Return number {i}", "answer": str(i)}) + "\n"
                            for i in range(6)))
    rules = [{"match": f"Return number {i}\\b", "text": repl(f"FINAL('{i}')"), "delay": 0.6} for i in range(6)]
    write_script(work / "slow.json", rules)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")} | {"RLM_PLUGINS": BENCH}
    command = [RLM_SCRIPT, "bench", "run", "--pack", str(pack),
               "--model", "scripted:slow.json", "--sandbox", "process", "-q"]
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cases_dir = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = list((work / ".rlm" / "benchmarks").glob("bench_*/cases/*.json"))
        if len(found) >= 2:
            cases_dir = found[0].parent
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert cases_dir is not None, process.stderr.read().decode()
    finished = {p.name: p.read_text() for p in cases_dir.glob("*.json")}
    assert 2 <= len(finished) < 6
    bench_id = cases_dir.parent.name
    done = subprocess.run([*command[:3], "--resume", bench_id, "--json"], cwd=work, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    summary = BenchmarkSummary.model_validate_json(done.stdout)
    assert summary.resumed_cases == len(finished) and summary.metrics.accuracy == 1.0 and summary.metrics.cases == 6
    assert {name: (cases_dir / name).read_text() for name in finished} == finished


def test_run_in_the_default_monty_sandbox(cli, work):
    pytest.importorskip("pydantic_monty")
    write_script(work / "smoke.json", SMOKE_RULES)
    code, out, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--model", "scripted:smoke.json", "--json", "-q",
                         plugins="rlm-sandbox-monty")
    assert code == 0, err
    summary = BenchmarkSummary.model_validate_json(out)
    assert summary.sandbox == "monty" and {c.sandbox for c in summary.cases} == {"monty"}
    assert summary.metrics.accuracy == 1.0


def test_a_run_that_cannot_start_leaves_nothing_behind(cli, work):
    code, _, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--framework", "dspy", "--model", "scripted:x.json",
                       "--sandbox", "process")
    assert code == 2 and "unknown framework 'dspy'" in err
    assert not list((work / ".rlm" / "benchmarks").glob("bench_*"))


def test_judge_command_labels_predictions_and_resumes(cli, work):
    (work / "ref.jsonl").write_text(json.dumps({"question_id": "q1", "question": "Where?", "answer": "Paris"}) + "\n")
    (work / "pred.jsonl").write_text(json.dumps({"question_id": "q1", "hypothesis": "Paris, France"}) + "\n")
    write_script(work / "judge.json", [{"match": "Model response: Paris", "text": "yes"}])
    args = ("bench", "judge", "pred.jsonl", "--reference", "ref.jsonl", "--model", "scripted:judge.json")
    code, out, err = cli(*args)
    assert code == 0, err
    assert "judged 1, skipped 0 already judged; accuracy 100.0% over 1" in out
    row = json.loads((work / "pred.judged.jsonl").read_text())
    assert row["autoeval_label"] == {"model": "scripted:judge.json", "label": True, "raw": "yes"}
    assert "judged 0, skipped 1" in cli(*args)[1]


def test_sink_option_feeds_every_case_and_an_unknown_sink_is_refused(cli, work):
    write_script(work / "direct.json", [{"match": ".", "text": repl("print(len(context))\nFINAL('Kasrin')")}])
    args = ("bench", "run", "--pack", str(DATA / "evals.yaml"), "--model", "scripted:direct.json", "--sandbox",
            "process", "--limit", "2", "--json")
    code, out, err = cli(*args, "--sink", "nope")
    assert code == 2 and "unknown sink 'nope'" in err
    code, out, err = cli(*args, "--sink", "local", plugins="rlm-sink-local")
    assert code == 0, err
    summary = BenchmarkSummary.model_validate_json(out)
    lines = [json.loads(line) for line in (work / ".rlm" / "observability" / "runs.jsonl").read_text().splitlines()]
    assert {line["run_id"] for line in lines} >= {c.run_id for c in summary.cases}


def test_instructions_are_part_of_the_identity_and_compare_says_when_they_differ(cli, work):
    write_script(work / "direct.json", [{"match": ".", "text": repl("print(len(context))\nFINAL('Kasrin')")}])
    (work / "guide.md").write_text("Answer with the capital's name only.")
    args = ("bench", "run", "--pack", str(DATA / "evals.yaml"), "--model", "scripted:direct.json", "--sandbox",
            "process", "--limit", "1", "--json")
    code, out, err = cli(*args, "--instructions", "@guide.md")
    assert code == 0, err
    guided = BenchmarkSummary.model_validate_json(out)
    assert guided.instructions == "Answer with the capital's name only."
    first = json.loads(Path(guided.cases[0].trajectory_path).read_text().splitlines()[0])
    assert first["data"]["settings"]["instructions"] == guided.instructions
    code, out, err = cli(*args)
    plain = BenchmarkSummary.model_validate_json(out)
    assert plain.instructions is None
    code, out, err = cli("bench", "compare", guided.benchmark_id, plain.benchmark_id)
    assert "different instructions" in out + err
    code, out, err = cli(*args, "--instructions", "@missing.md")
    assert code == 2 and "cannot read missing.md" in err
