"""How rlm-bench names its figures and shows its help, through the installed ``rlm`` command as a user types it:
figures named for what they are (mean score, correct count), marks that follow the score, the HTML report on
stdout (``> report.html``) or in ``--output``, and short help that is never cut."""

from __future__ import annotations

import os
import subprocess

import pytest

from bench_data import BENCH, RLM_SCRIPT, SMOKE_RULES, repl, write_script
from bench_data.fixtures import isolated_env, work  # noqa: F401 (fixtures)

WRONG = [  # every answer of pure_rlm_smoke wrong: each case scores 0
    {"match": "How many characters", "text": repl("FINAL(-100000)")},
    {"match": "first word", "text": repl("FINAL('nope')")},
    {"match": "lantern", "text": repl("FINAL(-100000)")},
]


def rlm(*args: str, shell: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "RLM_PLUGINS": BENCH, "COLUMNS": "100"}
    if shell:
        return subprocess.run(shell.replace("rlm ", f"{RLM_SCRIPT} ", 1), shell=True, env=env, capture_output=True,
                              text=True, timeout=120)
    return subprocess.run([RLM_SCRIPT, *args], env=env, capture_output=True, text=True, timeout=120)


def bench(work, rules, name: str) -> subprocess.CompletedProcess:
    write_script(work / name, rules)
    return rlm("bench", "run", "-p", "pure_rlm_smoke", "--model", f"scripted:{name}", "--sandbox", "process")


def test_a_benchmark_scoring_zero_shows_no_tick_and_names_its_figures(work):
    done = bench(work, WRONG, "wrong.json")
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith(("✓", "✗", "◐"))]
    assert len(progress) == 3 and all(line.startswith("✗ ") for line in progress), done.stderr
    assert "mean score 0.000 · correct 0/3 (full score) · completed 3/3" in done.stdout
    assert "accuracy" not in done.stdout and "✓" not in done.stdout.split("(✓")[0]
    cases = [line for line in done.stdout.splitlines() if line.startswith(("✓", "✗", "◐"))]
    assert len(cases) == 3 and all(line.startswith("✗ smoke_") for line in cases)

    done = bench(work, [SMOKE_RULES[0], SMOKE_RULES[1], {"match": "lantern", "text": repl("FINAL(2)")}], "half.json")
    assert "◐ smoke_word_count" in done.stderr and "✓ smoke_length" in done.stderr
    assert "correct 2/3 (full score)" in done.stdout
    report = rlm("bench", "report", "latest")
    assert "mean score **0." in report.stdout and "| pack | cases | mean score | correct |" in report.stdout
    board = rlm("leaderboard")
    assert board.stdout.startswith("ranked by mean score (higher is better)")
    assert "SCORE mean score" in board.stdout and "EFF efficiency: mean score per 1,000 tokens" in board.stdout
    assert rlm("leaderboard", "--metric", "score").stdout == board.stdout


def test_the_html_report_goes_where_the_user_sends_it(work):
    assert bench(work, SMOKE_RULES, "good.json").returncode == 0
    done = rlm(shell="rlm bench report --format html > report.html")
    assert done.returncode == 0, done.stderr
    assert (work / "report.html").read_text().startswith("<!DOCTYPE html>")
    done = rlm("bench", "report", "latest", "--format", "html", "--output", "out.html")
    assert done.returncode == 0 and done.stdout == "" and "report: out.html" in done.stderr
    assert (work / "out.html").read_text().startswith("<!DOCTYPE html>")
    # in a terminal without --output: saved next to the summary, its path printed (no HTML on the screen)
    primary, replica = os.openpty()
    env = {**os.environ, "RLM_PLUGINS": BENCH}
    code = subprocess.run([RLM_SCRIPT, "bench", "report", "--format", "html"], stdout=replica, stderr=subprocess.PIPE,
                          env=env, text=True, timeout=120)
    os.close(replica)
    os.close(primary)
    saved = list((work / ".rlm" / "benchmarks").glob("*.html"))
    assert code.returncode == 0 and len(saved) == 1 and f"report: .rlm/benchmarks/{saved[0].name}" in code.stderr
    # several ids: html only, and a usage error (exit 2) elsewhere
    assert bench(work, SMOKE_RULES, "again.json").returncode == 0
    done = rlm("bench", "report", "latest", "previous", "--format", "csv")
    assert done.returncode == 2 and "csv reports cover one benchmark" in done.stderr
    assert rlm("bench", "report", "latest", "previous", "--format", "html").stdout.count('class="benchmark"') == 2


@pytest.mark.parametrize("command", [("bench",), ("leaderboard",)])
def test_help_is_never_cut(command, work):
    done = rlm(*command, "--help")
    body = done.stdout.split("\n", 1)[1]  # the usage line's [ARGS]... is click's, not a cut
    assert done.returncode == 0 and "..." not in body
    if command == ("leaderboard",):
        assert "efficiency (mean score per 1,000 tokens)" in " ".join(done.stdout.split())
