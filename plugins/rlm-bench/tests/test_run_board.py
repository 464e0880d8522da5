"""``rlm leaderboard --runs``: individual saved runs ranked by reward, accuracy, tokens, cost, seconds or steps,
filtered as ``rlm runs list --filter`` filters them. A run's accuracy is its benchmark case's saved score, or its
``expected`` label matched; a run with neither ranks last on accuracy."""

from __future__ import annotations

import json

from bench_data import SMOKE_RULES, write_script
from bench_data.fixtures import cli, isolated_env, work  # noqa: F401 (fixtures)


def one_run(cli, work, name: str, replies: list[str], *extra: str) -> str:
    (work / f"{name}.json").write_text(json.dumps({"responses": replies}))
    code, out, err = cli("run", f"Task {name}", "--model", f"scripted:{name}.json", "--sandbox", "process",
                         "--no-nudge-first-answer", "--json", *extra)
    assert code == 0, err
    return json.loads(out)["run_id"]


def test_runs_are_ranked_by_accuracy_reward_and_tokens_with_filters(cli, work):
    right = one_run(cli, work, "right", ["```repl\nprint(6 * 7)\n```", "FINAL(42)"], "--label", "expected=42")
    wrong = one_run(cli, work, "wrong", ["FINAL(41)"], "--label", "expected=42")
    plain = one_run(cli, work, "plain", ["FINAL(hello)"], "--label", "team=b")
    code, out, err = cli("leaderboard", "--runs", "--metric", "accuracy", "--json")
    assert code == 0, err
    board = json.loads(out)
    assert [(r["run_id"], r["accuracy"]) for r in board["rows"]] == [(right, 1.0), (wrong, 0.0), (plain, None)]
    assert board["higher_is_better"] is True and board["statistics"]["count"] == 2
    code, out, _ = cli("leaderboard", "--runs", "--json")  # reward by default: the two-step run earned more
    assert json.loads(out)["metric"] == "reward" and json.loads(out)["rows"][0]["run_id"] == right
    code, out, _ = cli("leaderboard", "--runs", "--metric", "tokens", "--json")
    rows = json.loads(out)["rows"]
    assert rows[-1]["run_id"] == right and rows[0]["tokens"] <= rows[1]["tokens"], "fewest tokens first"
    code, out, _ = cli("leaderboard", "--runs", "-F", "label=team=b", "-F", "model=scripted:*", "--json")
    assert [r["run_id"] for r in json.loads(out)["rows"]] == [plain]
    code, out, _ = cli("leaderboard", "--runs", "-F", "since=2999-01-01")
    assert code == 0 and "no saved run matches the filters" in out
    code, out, _ = cli("runs", "list", "-F", "label=expected", "--json", plugins="rlm-runs")
    assert sorted(r["run_id"] for r in json.loads(out)) == sorted([right, wrong])
    code, out, _ = cli("leaderboard", "--runs")
    assert "runs ranked by reward (higher is better)" in out and right in out


def test_a_benchmark_run_carries_its_case_score(cli, work):
    write_script(work / "smoke.json", SMOKE_RULES)
    code, out, err = cli("bench", "run", "-p", "pure_rlm_smoke", "--model", "scripted:smoke.json", "--sandbox",
                         "process", "--json")
    assert code == 0, err
    scores = {c["run_id"]: c["score"] for c in json.loads(out)["cases"]}
    code, out, err = cli("leaderboard", "--runs", "--metric", "accuracy", "-F", "label=preset=pure_rlm_smoke", "--json")
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert {r["run_id"]: r["accuracy"] for r in rows} == scores and len(rows) == 3


def test_a_bad_metric_or_filter_is_exit_2(cli, work):
    code, _, err = cli("leaderboard", "--runs", "--metric", "efficiency")
    assert code == 2 and "unknown metric 'efficiency' for runs" in err
    code, _, err = cli("leaderboard", "--runs", "-F", "colour=red")
    assert code == 2 and "unknown filter key 'colour'" in err
    code, _, err = cli("runs", "list", "-F", "since=yesterday", plugins="rlm-runs")
    assert code == 2 and "is not a date" in err


def test_a_runs_text_never_drives_the_terminal(cli, work):
    hostile = "\x1b[2J\x9b31m\x07"
    (work / "evil.json").write_text(json.dumps({"responses": ["FINAL(x)"]}))
    code, _, err = cli("run", f"Clear {hostile}", "--model", "scripted:evil.json", "--sandbox", "process",
                       "--no-nudge-first-answer", "--label", f"team={hostile}", "-q")
    assert code == 0, err
    code, out, _ = cli("leaderboard", "--runs", "-F", "label=team", "--markdown")
    assert code == 0 and "Clear " in out and not [c for c in out if c not in "\n\t" and not c.isprintable()], out
    code, out, _ = cli("leaderboard", "--runs", "-F", "label=team")
    assert code == 0 and "Clear " in out and not [c for c in out if c not in "\n\t" and not c.isprintable()], out
    code, out, _ = cli("leaderboard", "--runs", "--json")
    assert json.loads(out)["rows"][0]["labels"]["team"] == hostile and out.isascii()
