"""The main screens at 80×24 against committed SVG screenshots (``snapshots/``; regenerate with
``RLM_UPDATE_SNAPSHOTS=1``). Textual's random ids are stripped before comparing (``tui_support.normalise_svg``)."""

from __future__ import annotations

import json

from tui_support import TS0, check_snapshot, drive, event, sample_home, settled, write_run

from test_tui_app import A, B, make_app

PRESETS = [{"name": "pure_rlm_smoke", "cases": 3, "source": "rlm-bench", "description": "Pure RLM basics"},
           {"name": "generic_smoke", "cases": 2, "source": "rlm-bench", "description": "Generic sanity"}]
BOARD = {"rows": [{"rank": 1, "preset": "pure_rlm_smoke", "model": "openai:gpt-4o-mini", "mode": "native", "cases": 3,
                   "accuracy": 1.0, "avg_reward": 1.4, "tokens": 9000, "cost": 0.0021},
                  {"rank": 2, "preset": "pure_rlm_smoke", "model": "scripted:root", "mode": "native", "cases": 3,
                   "accuracy": 0.33, "avg_reward": 0.2, "tokens": 4000, "cost": None}]}
RUN_BOARD = {"metric": "reward", "higher_is_better": True,
             "statistics": {"count": 3, "mean": 1.3, "median": 1.2, "stdev": 0.9, "min": 0.4, "max": 2.3},
             "rows": [{"rank": i + 1, "run_id": run_id, "started": f"2026-11-16T0{i}:00:00+00:00", "status": "final",
                       "model": model, "environment": "pure_rlm", "framework": "native", "steps": steps,
                       "reward": reward, "accuracy": accuracy, "tokens": tokens, "cost": cost, "seconds": seconds,
                       "task": task, "labels": labels}
                      for i, (run_id, model, steps, reward, accuracy, tokens, cost, seconds, task, labels)
                      in enumerate([
                          (A, "openai:gpt-4o-mini", 4, 2.3, 1.0, 3720, 0.0004, 2.4, "What is the magic number?",
                           {"expected": "4217"}),
                          (B, "scripted:root", 3, 1.2, 0.0, 2790, 0.0003, 1.8, "What is the magic number?",
                           {"expected": "4217"}),
                          ("run_20261116_020000_000000_cccc", "scripted:root", 2, 0.4, None, 1860, None, 1.2,
                           "Delegate the search", {})])]}


def test_main_screens(tmp_path, monkeypatch):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)
    app.animation_level = "none"  # the tabs' underline would be caught mid-slide
    app.load_presets = lambda: None  # fixed presets and leaderboard below, no subprocess
    app.load_leaderboard = lambda: None

    live = write_run(home, "run_20261116_030000_000000_live", [{"code": "print(len(context))", "stdout": "2000\n"}],
                     ts=TS0 + 10_800, finished=False)
    with live.open("a") as out:  # step 2 under way: its model call sent, no answer yet
        for seq, (kind, data) in enumerate([("step_start", {"step": 2}), ("model_call_start", {
                "call": 20, "role": "root", "model": "scripted:root", "provider": "scripted", "purpose": "turn"})], 20):
            out.write(json.dumps(event(kind, live.stem, seq, data, ts=TS0 + 10_802), separators=(",", ":")) + "\n")
    monkeypatch.setattr("rlm_tui.live.clock", lambda: TS0 + 10_805.0)  # the live clock, frozen

    async def body(pilot):
        await settled(pilot, app)
        check_snapshot(app, "runs")
        app.execute("/rlm replay run_20261116_030000_000000_live")
        await settled(pilot, app)
        check_snapshot(app, "live")
        app.execute(f"/rlm replay {A}")
        await pilot.pause()
        await pilot.press("home", "down")
        await settled(pilot, app)
        check_snapshot(app, "run")
        app.execute(f"/compare {A} {B}")
        await settled(pilot, app)
        check_snapshot(app, "compare")
        await pilot.press("f4")
        view = app.query_one("BenchView")
        view.show_presets(PRESETS)
        view.show_leaderboard(BOARD)
        app.query_one("#bench-tabs").active = "tab-leaderboard"
        await settled(pilot, app)
        check_snapshot(app, "bench")
        view.show_board("runs")  # r: the leaderboard of runs (rlm leaderboard --runs --json)
        view.show_run_board(RUN_BOARD)
        await settled(pilot, app)
        check_snapshot(app, "bench_runs")
        await pilot.press("f1")
        await settled(pilot, app)
        check_snapshot(app, "help")

    drive(app, body)
