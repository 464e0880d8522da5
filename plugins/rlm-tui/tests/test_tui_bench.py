"""Benchmarks from the TUI: the presets (F4), a small preset run with /rlm bench and its progress, the
leaderboard with its chart, a report, the leaderboard of runs — all through ``rlm`` commands in a subprocess."""

from __future__ import annotations

import json

from tui_support import TS0, drive, wait_for, write_run

from rlm_tui.bench import chart
from test_tui_app import make_app


def test_run_a_small_preset_and_see_the_leaderboard(rlm_isolated):
    script = rlm_isolated.work / "bench.json"
    script.write_text(json.dumps({"rules": [{"match": ".", "text": "FINAL(42)"}]}))
    app = make_app(rlm_isolated.runs)

    async def body(pilot):
        await pilot.press("f4")
        await wait_for(pilot, lambda: app.query_one("#presets").row_count > 0, seconds=60, what="the presets")
        assert "pure_rlm_smoke" in [p["name"] for p in app.presets]
        app.execute(f"/rlm bench preset=pure_rlm_smoke limit=2 model=scripted:{script} sandbox=monty")
        view = app.query_one("BenchView")
        await wait_for(pilot, lambda: view.progress is not None and view.progress.finished, seconds=90,
                       what="the benchmark")
        progress = view.progress
        assert progress.error is None, progress.error
        assert (progress.done, progress.total) == (2, 2) and len(progress.lines) == 2
        # the status line is drawn from the app's thread after the progress ends: wait for it, never race it
        await wait_for(pilot, lambda: "done" in str(app.query_one("#bench-status").render()), seconds=30,
                       what="the status line")
        await wait_for(pilot, lambda: app.query_one("#board").row_count == 1, seconds=60, what="the leaderboard")
        assert "accuracy" in str(app.query_one("#chart").render())
        app.focus_view()
        await pilot.press("l", "m")
        assert app.query_one("#bench-tabs").active == "tab-leaderboard"
        assert "avg_reward" in str(app.query_one("#chart").render())
        app.execute("/rlm bench report candidate=latest")
        await wait_for(pilot, lambda: "pure_rlm_smoke" in str(app.query_one("#report").render()), seconds=60,
                       what="the report")
        app.execute("/rlm bench report candidate=nonexistent_bench")
        await wait_for(pilot, lambda: "nonexistent_bench" in app.last_message or "failed" in app.last_message,
                       seconds=60, what="the report's error")

    drive(app, body)


def test_chart_bars_scale_to_the_best():
    lines = chart([{"preset": "p", "model": "a", "accuracy": 1.0}, {"preset": "p", "model": "b", "accuracy": 0.5},
                   {"preset": "p", "model": "c", "accuracy": None}], "accuracy", width=10)
    assert lines[0].count("█") == 10 and lines[1].count("█") == 5 and lines[2].endswith("—")
    assert chart([{"preset": "p", "model": "a", "accuracy": 0.0}], "accuracy")[0].endswith(" 0")


def test_the_runs_leaderboard_ranks_cycles_its_metric_and_shows_hostile_text_as_text(rlm_isolated):
    """Issue 49: ``rlm leaderboard --runs --json`` in a subprocess, in the benchmarks view: ``/leaderboard runs``
    ranks the saved runs, ``m`` ranks them by the next metric, ``r`` switches boards, enter opens a run; a run's
    task, model and labels are hostile text."""
    from test_tui_hostile_text import NASTY, controls, screen

    home = rlm_isolated.runs
    good, wrong = "run_20261116_000000_000000_good", "run_20261116_010000_000000_bad0"
    nasty = "run_20261116_020000_000000_nsty"
    write_run(home, good, [{"code": "a", "reward": 0.5}] * 4, labels={"expected": "4217"})  # accuracy 1
    write_run(home, wrong, [{"code": "b", "reward": 0.9}] * 3, labels={"expected": "4217"}, answer="1234",
              ts=TS0 + 3600)  # accuracy 0, the best reward
    write_run(home, nasty, [{"code": "c", "reward": 0.1}] * 2, task=NASTY, model=f"scripted:{NASTY}",
              labels={"note": NASTY}, ts=TS0 + 7200)
    app = make_app(home)

    def order() -> list[str]:
        return [str(key.value) for key in app.query_one("#run-board").rows]

    def chart_text() -> str:
        return str(app.query_one("#chart").render())

    async def body(pilot):
        await pilot.resize_terminal(160, 40)
        app.execute("/leaderboard runs")
        await wait_for(pilot, lambda: app.query_one("#run-board").row_count == 3, seconds=60, what="the runs board")
        view = app.query_one("BenchView")
        assert app.view == "bench" and app.query_one("#bench-tabs").active == "tab-leaderboard"
        assert not app.query_one("#board").display and app.query_one("#run-board").display
        assert order() == [wrong, good, nasty]  # reward 2.7, 2.0, 0.2
        assert "runs ranked by reward (higher is better)" in chart_text()
        shown = screen(app)
        assert controls(shown) == [] and "[link=https://evil.example]" in shown  # task, model and label as text
        await pilot.press("m")
        await wait_for(pilot, lambda: "by accuracy (higher is better)" in chart_text(), seconds=60, what="accuracy")
        assert order() == [good, wrong, nasty] and view.run_board["rows"][2]["accuracy"] is None  # none: last
        await pilot.press("m")
        await wait_for(pilot, lambda: "runs ranked by tokens (lower is better)" in chart_text(), seconds=60,
                       what="tokens")
        assert order() == [nasty, wrong, good]
        assert controls(screen(app)) == []
        await pilot.press("r")  # the benchmarks' board (none saved here), and back
        assert app.query_one("#board").display and not app.query_one("#run-board").display
        await wait_for(pilot, lambda: "no benchmark saved yet" in chart_text(), seconds=60, what="benchmarks")
        await pilot.press("r")
        await wait_for(pilot, lambda: "runs ranked by tokens" in chart_text() and app.query_one("#run-board")
                       .row_count == 3, seconds=60, what="the runs again")
        app.execute("/leaderboard runs metric=steps label=expected")  # filtered as rlm runs list --filter
        await wait_for(pilot, lambda: "label=expected" in chart_text() and app.query_one("#run-board").row_count
                       == 2, seconds=60, what="the filtered board")
        assert order() == [wrong, good] and "runs ranked by steps (lower is better)" in chart_text()
        await pilot.press("enter")  # opens the run of the row
        assert app.view == "run" and app.query_one("RunView").run_id == wrong
        app.execute("/leaderboard runs since=someday")
        await wait_for(pilot, lambda: "since" in app.last_message, seconds=60, what="the command's error")
        assert "leaderboard" in app.last_message

    drive(app, body)
