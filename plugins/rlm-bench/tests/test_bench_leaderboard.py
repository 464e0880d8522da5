"""``rlm leaderboard`` over summaries of real benchmark runs (scripted models): ranking, filters, exports, errors."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from bench_data import SMOKE_RULES, DATA, repl, write_script
from bench_data.fixtures import cli, isolated_env  # noqa: F401 (fixtures)
from rlm_bench import leaderboard as lb
from rlm_bench.store import BenchStore

HALF_RULES = [  # the first word wrong, then a long search for the count: more steps
    SMOKE_RULES[0],
    {"match": "first word", "text": repl("FINAL('Harbours')")},
    {"match": "lantern", "text": repl("print('looking')")},
    {"match": "looking", "text": repl("import re\nFINAL(len(re.findall(r'\\blantern\\b', context, re.I)))")},
]


@pytest.fixture
def benchmarks(cli, isolated_env):
    """Three real benchmarks: smoke all right, smoke partly right (more steps), a direct-llm pack (2 cases)."""
    work = Path(isolated_env["WORK"])
    write_script(work / "good.json", SMOKE_RULES)
    write_script(work / "half.json", HALF_RULES)
    write_script(work / "direct.json", [{"match": "Velmora", "text": "Kasrin"}, {"match": "Isjor", "text": "Corfi"}])
    common = ("--sandbox", "process", "-q", "--json")
    ids = {}
    for name, args in {
        "good": ("--preset", "pure_rlm_smoke", "--model", "scripted:good.json"),
        "half": ("--preset", "pure_rlm_smoke", "--model", "scripted:half.json"),
        "direct": ("--pack", str(DATA / "evals.yaml"), "--mode", "direct-llm", "--model", "scripted:direct.json",
                   "--limit", "2"),
    }.items():
        code, out, err = cli("bench", "run", *args, *common)
        assert code == 0, err
        ids[name] = json.loads(out)["benchmark_id"]
    store = BenchStore(work / ".rlm")
    return ids, [store.load(i) for i in ids.values()]


def leaderboard_json(cli, *args: str) -> dict:
    code, out, err = cli("leaderboard", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_ranking_by_each_metric_follows_its_direction(cli, benchmarks):
    ids, summaries = benchmarks
    by_id = {s.benchmark_id: s for s in summaries}
    for metric, higher in lb.METRICS.items():
        payload = leaderboard_json(cli, "--metric", metric)
        assert payload["metric"] == metric and payload["higher_is_better"] is higher
        rows = payload["rows"]
        assert [r["rank"] for r in rows] == [1, 2, 3]
        values = [lb.row_from_summary(by_id[r["benchmark_id"]]).metric(metric) for r in rows]
        present = [v for v in values if v is not None]
        assert present == sorted(present, reverse=higher), (metric, values)
        assert values[len(present):] == [None] * (len(values) - len(present))  # missing values rank last
    rows = leaderboard_json(cli, "--metric", "accuracy")["rows"]
    assert [r["benchmark_id"] for r in rows] == [ids["good"], ids["half"], ids["direct"]]
    assert [r["accuracy"] for r in rows] == pytest.approx([1.0, 2 / 3, 0.5], abs=1e-6)
    good = rows[0]
    assert good["preset"] == "pure_rlm_smoke" and good["mode"] == "native" and good["model"] == "scripted:good.json"
    assert good["sandbox"] == "process" and good["cases"] == 3 and good["completion_rate"] == 1.0
    assert good["efficiency"] == pytest.approx(good["accuracy"] * 1000 / good["avg_tokens"], rel=1e-5)
    steps = leaderboard_json(cli, "--metric", "steps")["rows"]
    assert steps[-1]["benchmark_id"] == ids["half"]  # the most steps per case ranks last


def test_filters_limit_and_errors(cli, benchmarks):
    ids, _ = benchmarks
    ranked = lambda *a: [r["benchmark_id"] for r in leaderboard_json(cli, *a)["rows"]]  # noqa: E731
    assert ranked("--filter", "mode=direct-llm") == [ids["direct"]]
    assert ranked("--filter", "preset=pure_rlm_smoke", "--filter", "model=scripted:half*") == [ids["half"]]
    assert ranked("--filter", "min_cases=3", "--metric", "reward") == ranked("--filter", "preset=pure_rlm_smoke",
                                                                            "--metric", "reward")
    assert ranked("--filter", "min_accuracy=90%") == [ids["good"]]
    assert ranked("--filter", "max_accuracy=0.7", "--filter", "min_completion=1") == [ids["half"], ids["direct"]]
    assert ranked("--filter", "since=2000-01-01", "--limit", "1") == [ids["good"]]
    assert ranked("--filter", "until=2000-01-01") == []
    assert ranked("--filter", "sandbox=nothing") == []
    code, out, _ = cli("leaderboard", "--filter", "sandbox=nothing")
    assert code == 0 and "no benchmark matches the filters" in out

    code, _, err = cli("leaderboard", "--metric", "speed")
    assert code == 2 and "unknown metric 'speed'" in err and "accuracy, reward, completion, efficiency" in err
    code, _, err = cli("leaderboard", "--filter", "colour=blue")
    assert code == 2 and "unknown filter key 'colour'" in err and "valid keys: preset, model, mode" in err
    code, _, err = cli("leaderboard", "--filter", "min_cases=many")
    assert code == 2 and "not a whole number" in err
    code, _, err = cli("leaderboard", "--filter", "since=yesterday")
    assert code == 2 and "is not a date" in err
    code, _, err = cli("leaderboard", "--json", "--csv")
    assert code == 2 and "choose one of" in err


def test_table_csv_and_markdown_exports(cli, benchmarks, isolated_env):
    ids, _ = benchmarks
    code, out, _ = cli("leaderboard", "--metric", "tokens")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "ranked by tokens (lower is better)"
    assert lines[1].split()[:3] == ["#", "BENCHMARK", "PRESET"]
    assert len(lines) == 8 and all(i in out for i in ids.values())
    assert lines[1].split()[8] == "SCORE" and lines[-2].startswith("SCORE mean score") and lines[-1].startswith("EFF ")
    code, out, _ = cli("leaderboard", "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["rank"] for r in rows] == ["1", "2", "3"] and rows[0]["benchmark_id"] == ids["good"]
    assert {"accuracy", "avg_reward", "tokens", "cost", "p50_latency_s", "efficiency"} <= set(rows[0])
    code, out, _ = cli("leaderboard", "--markdown", "--metric", "completion")
    assert out.startswith("# Leaderboard by completion (higher is better)") and f"| `{ids['half']}` |" in out
    assert "## Statistics of completion" in out and "over 3 benchmark(s)" in out
    # an unreadable summary is skipped with a warning
    (Path(isolated_env["WORK"]) / ".rlm" / "benchmarks" / "bench_broken.json").write_text("{")
    code, out, err = cli("leaderboard", "--json")
    assert code == 0 and len(json.loads(out)["rows"]) == 3 and "skipped bench_broken.json" in err


def test_empty_home_and_pure_functions(cli, benchmarks):
    _, summaries = benchmarks
    where = lb.parse_filters(["env=*", "tag=nothing"])
    assert lb.rank(summaries, "accuracy", where) == []
    with pytest.raises(lb.LeaderboardError, match="not KEY=VALUE"):
        lb.parse_filters(["preset"])
    assert lb.efficiency(1.0, 0) is None and lb.efficiency(0.5, 2000) == 0.25 and lb.efficiency(None, 2000) is None
    stats = lb.statistics_block(lb.rank(summaries, "completion"), "completion")
    assert stats["count"] == 3 and stats["max"] == 1.0


def test_no_benchmarks_yet(cli):
    code, out, _ = cli("leaderboard")
    assert code == 0 and "no saved benchmarks" in out


def test_efficiency_ranks_right_answers_per_token_not_the_step_reward(cli, isolated_env):
    """``--metric efficiency`` is mean score per token, not reward per token, which ranked a benchmark that scored 0
    first: any final answer earns reward 1.0, and a one-call direct benchmark spends few tokens on its wrong answers."""
    work = Path(isolated_env["WORK"])
    write_script(work / "good.json", SMOKE_RULES)
    write_script(work / "wrong.json", [{"match": "Velmora", "text": "Nowhere"}, {"match": "Isjor", "text": "Nobody"}])
    common = ("--sandbox", "process", "-q", "--json")
    code, out, err = cli("bench", "run", "--preset", "pure_rlm_smoke", "--model", "scripted:good.json", *common)
    assert code == 0, err
    right = json.loads(out)["benchmark_id"]
    code, out, err = cli("bench", "run", "--pack", str(DATA / "evals.yaml"), "--mode", "direct-llm", "--model",
                         "scripted:wrong.json", "--limit", "2", *common)
    assert code == 0, err
    wrong = json.loads(out)
    assert wrong["metrics"]["accuracy"] == 0 and wrong["metrics"]["avg_reward"] == 1.0  # reward knows no answer
    rows = leaderboard_json(cli, "--metric", "efficiency")["rows"]
    assert [r["benchmark_id"] for r in rows] == [right, wrong["benchmark_id"]]
    assert rows[1]["efficiency"] == 0 and rows[0]["efficiency"] > 0


def test_json_output_carries_no_control_a_terminal_acts_on(cli, benchmarks):
    """A model name or preset is text from a summary on disk: the JSON keeps it, escaped so that a C1 control
    (U+009B is CSI to a terminal) or DEL never reaches the terminal raw."""
    from dataclasses import replace

    _, summaries = benchmarks
    rows = [replace(row, model="evil\x9b31m\x7f") for row in lb.rank(summaries, "accuracy")]
    text = lb.to_json(rows, "accuracy")
    assert "\x9b" not in text and "\x7f" not in text
    assert json.loads(text)["rows"][0]["model"] == "evil\x9b31m\x7f"
