"""Text of a run is model output: C0 and C1 controls (ESC, CSI U+009B, OSC U+009D, NEL U+0085), DEL and Rich markup
in a task, code, output, model name, run settings, a step's candidates, a benchmark row or a ranked run (task, model,
labels) never reach the terminal as such. Every view
is drawn by Textual's Pilot and what it would send to the terminal (the rendered screen) is searched."""

from __future__ import annotations

from tui_support import drive, svg_text, write_run

from test_tui_app import make_app

NASTY = "[link=https://evil.example]click[/link] \x9b2J\x9d8;;https://evil.example\x07 \x1b[31m \x85\x7f end"
RUN_A, RUN_B = "run_20261116_000000_000000_c1aa", "run_20261116_010000_000000_c1bb"
RUN_C = "run_20261116_020000_000000_\x9b2J"  # a file name is text of whoever wrote the run home


def controls(text: str) -> list[str]:
    """The control characters in ``text`` (newlines aside), as escapes."""
    return [repr(c) for c in text if (ord(c) < 32 and c != "\n") or 0x7F <= ord(c) < 0xA0]


def screen(app) -> str:
    return svg_text(app.export_screenshot())


def hostile_home(home) -> None:
    step = {"code": f"print({NASTY!r})", "stdout": NASTY, "error": NASTY}
    tried = {"candidate": 1, "reply": NASTY, "action": NASTY, "code": NASTY, "output": NASTY, "error": NASTY,
             "score": 0.5, "chosen": True, "tokens": 9}
    write_run(home, RUN_A, [step, {"code": NASTY, "branches": (tried, {**tried, "candidate": 2, "error": None,
                                                                      "chosen": False})}],
              task=NASTY, model=f"scripted:{NASTY}", finished=False,
              max_steps=NASTY)
    write_run(home, RUN_B, [{"code": NASTY, "stdout": NASTY}], task=NASTY)
    write_run(home, RUN_C, [{"code": "x"}], task="named with a control character")


def test_every_view_shows_hostile_run_text_as_text(tmp_path):
    home = tmp_path / ".rlm"
    hostile_home(home)
    app = make_app(home)
    seen: dict[str, list[str]] = {}

    async def body(pilot):
        await pilot.resize_terminal(160, 40)
        seen["runs list"] = controls(screen(app))
        assert len(app.query_one("RunsView").runs) == 3
        assert app.run_ids == [RUN_B, RUN_A]  # completion never types the control character onto the command line
        app.execute(f"/rlm replay {RUN_A}")  # a live run: title, meters, the call in progress, the steps
        await pilot.pause()
        seen["run view"] = controls(screen(app))
        assert "[link=https://evil.example]" in screen(app)  # markup shown as the text it is
        await pilot.press("down")
        await pilot.pause()
        seen["step detail"] = controls(screen(app))
        app.query_one("#detail-box").scroll_end(animate=False)
        await pilot.pause()
        seen["step candidates"] = controls(screen(app))
        assert "candidates (2)" in screen(app).replace("\xa0", " ")  # the step's candidates, on screen
        app.execute(f"/compare {RUN_A} {RUN_B}")
        await pilot.pause()
        seen["compare"] = controls(screen(app))
        view = app.query_one("BenchView")
        app.action_view("bench")
        view.show_presets([{"name": NASTY, "cases": 2, "source": NASTY, "description": NASTY}])
        await pilot.pause()
        seen["bench presets"] = controls(screen(app))
        view.show_leaderboard({"rows": [{"rank": NASTY, "preset": NASTY, "model": NASTY, "mode": NASTY,
                                         "cases": NASTY, "accuracy": 0.5, "tokens": NASTY, "cost": NASTY}]})
        app.query_one("#bench-tabs").active = "tab-leaderboard"
        await pilot.pause()
        seen["leaderboard"] = controls(screen(app))
        assert "[link=https://evil" in screen(app)  # a cell is text, not markup (cut to the column)
        view.show_board("runs")
        view.show_run_board({"metric": "reward", "higher_is_better": True, "statistics": {"mean": 0.5},
                             "rows": [{"rank": 1, "run_id": NASTY, "started": NASTY, "status": NASTY, "model": NASTY,
                                       "environment": NASTY, "framework": NASTY, "steps": NASTY, "reward": 0.5,
                                       "accuracy": NASTY, "tokens": NASTY, "cost": NASTY, "seconds": NASTY,
                                       "task": NASTY, "labels": {NASTY: NASTY}}]})
        await pilot.pause()
        seen["runs leaderboard"] = controls(screen(app))
        assert "[link=https://evil" in screen(app) and "runs ranked by reward" in screen(app).replace("\xa0", " ")
        view.show_report(NASTY)
        await pilot.pause()
        seen["bench report"] = controls(screen(app))
        app.say(NASTY)
        await pilot.pause()
        seen["message line"] = controls(screen(app))

    drive(app, body)
    assert seen == {name: [] for name in seen}, seen
