"""Benchmarks from the TUI: the presets (F4), a small preset run with /rlm bench and its progress, the
leaderboard with its chart, a report — all through ``rlm bench`` in a subprocess."""

from __future__ import annotations

import json

from tui_support import drive, wait_for

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
                       what="the benchmark")  # fmt: skip
        progress = view.progress
        assert progress.error is None, progress.error
        assert (progress.done, progress.total) == (2, 2) and len(progress.lines) == 2
        assert "done" in str(app.query_one("#bench-status").render())
        await wait_for(pilot, lambda: app.query_one("#board").row_count == 1, seconds=60, what="the leaderboard")
        assert "accuracy" in str(app.query_one("#chart").render())
        app.focus_view()
        await pilot.press("l", "m")
        assert app.query_one("#bench-tabs").active == "tab-leaderboard"
        assert "avg_reward" in str(app.query_one("#chart").render())
        app.execute("/rlm bench report candidate=latest")
        await wait_for(pilot, lambda: "pure_rlm_smoke" in str(app.query_one("#report").render()), seconds=60,
                       what="the report")  # fmt: skip
        app.execute("/rlm bench report candidate=nonexistent_bench")
        await wait_for(pilot, lambda: "nonexistent_bench" in app.last_message or "failed" in app.last_message,
                       seconds=60, what="the report's error")  # fmt: skip

    drive(app, body)


def test_chart_bars_scale_to_the_best():
    lines = chart([{"preset": "p", "model": "a", "accuracy": 1.0}, {"preset": "p", "model": "b", "accuracy": 0.5},
                   {"preset": "p", "model": "c", "accuracy": None}], "accuracy", width=10)  # fmt: skip
    assert lines[0].count("█") == 10 and lines[1].count("█") == 5 and lines[2].endswith("—")
    assert chart([{"preset": "p", "model": "a", "accuracy": 0.0}], "accuracy")[0].endswith(" 0")
