"""The benchmark summary JSON (docs/schemas.md): ``schema_version`` 2 and token totals named as the OpenTelemetry
GenAI conventions do; a summary written by schema 1 (bench_data/summary_schema1.json: pure_rlm_smoke run with
the scripted SMOKE_RULES) and its case files still load for compare, report, leaderboard and resume."""

from __future__ import annotations

import csv
import io
import json
import shutil

from bench_data import DATA, SMOKE_RULES, write_script
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)
from rlm_bench.store import BenchStore

OLD_SUMMARY = DATA / "summary_schema1.json"
OLD_ID = "bench_20261124_205910_202358_4974"
TOKENS = {"input", "output", "total", "root", "sub"}


def test_a_summary_names_its_token_totals_as_opentelemetry_does(cli, work):
    write_script(work / "smoke.json", SMOKE_RULES)
    code, out, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--model", "scripted:smoke.json", "--sandbox",
                         "process", "--json", "-q")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["schema_version"] == 2
    metrics = summary["metrics"]["tokens"]
    assert set(metrics) == TOKENS and metrics["input"] + metrics["output"] == metrics["total"] > 0
    assert all(set(case["tokens"]) == TOKENS for case in summary["cases"])
    assert all(set(group["tokens"]) == TOKENS for group in summary["by_pack"].values())
    saved = BenchStore(work / ".rlm").case_path(summary["benchmark_id"], "smoke_length")
    assert set(json.loads(saved.read_text())["tokens"]) == TOKENS


def test_a_schema_1_summary_loads_for_compare_report_and_leaderboard(cli, work):
    store = BenchStore(work / ".rlm")
    store.root.mkdir(parents=True)
    shutil.copy(OLD_SUMMARY, store.summary_path(OLD_ID))
    write_script(work / "smoke.json", SMOKE_RULES)
    code, out, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--model", "scripted:smoke.json", "--sandbox",
                         "process", "--json", "-q")
    assert code == 0, err
    new_id = json.loads(out)["benchmark_id"]

    code, out, err = cli("bench", "compare", new_id, OLD_ID)  # the same answers: every gate passes
    assert code == 0, out + err
    code, out, err = cli("bench", "report", OLD_ID, "--format", "json")
    assert code == 0, err
    old = json.loads(out)
    assert old["schema_version"] == 2
    assert old["metrics"]["tokens"] == {"input": 1650, "output": 34, "total": 1684, "root": 1684, "sub": 0}
    assert old["cases"][0]["tokens"]["input"] == 550 and "prompt" not in out
    code, out, err = cli("bench", "report", OLD_ID, "--format", "csv")
    first = next(csv.DictReader(io.StringIO(out)))
    assert code == 0 and (first["input_tokens"], first["output_tokens"], first["total_tokens"]) == ("550", "7", "557")
    code, out, err = cli("leaderboard", "--json", "--metric", "tokens")
    assert code == 0 and not err, err
    assert {row["benchmark_id"]: row["tokens"] for row in json.loads(out)["rows"]}[OLD_ID] == 1684


def test_schema_1_case_files_resume_with_their_token_counts(work):
    store = BenchStore(work / ".rlm")
    old_case = json.loads(OLD_SUMMARY.read_text())["cases"][0]
    path = store.case_path(OLD_ID, old_case["case_id"])
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old_case))
    (loaded,) = store.load_cases(OLD_ID).values()
    assert (loaded.tokens.input, loaded.tokens.output, loaded.tokens.total) == (550, 7, 557)
