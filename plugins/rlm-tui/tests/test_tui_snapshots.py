"""The main screens at 80×24 against committed SVG screenshots (``snapshots/``; regenerate with
``RLM_UPDATE_SNAPSHOTS=1``). Textual's random ids are stripped before comparing (``tui_support.normalise_svg``)."""

from __future__ import annotations

from tui_support import check_snapshot, drive, sample_home

from test_tui_app import A, B, make_app

PRESETS = [{"name": "pure_rlm_smoke", "cases": 3, "source": "rlm-bench", "description": "Pure RLM basics"},
           {"name": "generic_smoke", "cases": 2, "source": "rlm-bench", "description": "Generic sanity"}]
BOARD = {"rows": [{"rank": 1, "preset": "pure_rlm_smoke", "model": "openai:gpt-4o-mini", "mode": "native", "cases": 3,
                   "accuracy": 1.0, "avg_reward": 1.4, "tokens": 9000, "cost": 0.0021},
                  {"rank": 2, "preset": "pure_rlm_smoke", "model": "scripted:root", "mode": "native", "cases": 3,
                   "accuracy": 0.33, "avg_reward": 0.2, "tokens": 4000, "cost": None}]}  # fmt: skip


def test_main_screens(tmp_path):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)
    app.animation_level = "none"  # the tabs' underline would be caught mid-slide
    app.load_presets = lambda: None  # fixed presets and leaderboard below, no subprocess
    app.load_leaderboard = lambda: None

    async def body(pilot):
        check_snapshot(app, "runs")
        app.execute(f"/rlm replay {A}")
        await pilot.pause()
        await pilot.press("home", "down")
        await pilot.pause()
        check_snapshot(app, "run")
        app.execute(f"/compare {A} {B}")
        await pilot.pause()
        check_snapshot(app, "compare")
        await pilot.press("f4")
        view = app.query_one("BenchView")
        view.show_presets(PRESETS)
        view.show_leaderboard(BOARD)
        app.query_one("#bench-tabs").active = "tab-leaderboard"
        await pilot.pause()
        check_snapshot(app, "bench")
        await pilot.press("f1")
        await pilot.pause()
        check_snapshot(app, "help")

    drive(app, body)
