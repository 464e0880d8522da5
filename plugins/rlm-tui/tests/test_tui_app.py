"""The app driven by Textual's Pilot: browse, open and replay runs, compare two, start a scripted run with
/rlm run and watch its steps arrive, bad input as one message."""

from __future__ import annotations

import json
from pathlib import Path

from tui_support import CANDIDATES, drive, sample_home, wait_for, write_run

from rlm_tui.app import RlmTui
from rlm_tui.bench import Bench
from rlm_tui.workspace import Workspace

A, B, C = "run_20261116_000000_000000_aaaa", "run_20261116_010000_000000_bbbb", "run_20261116_020000_000000_cccc"


def make_app(home: Path, settings=None) -> RlmTui:
    return RlmTui(Workspace(home=home, settings=settings), Bench(cwd=home.parent))


def test_browse_filter_open_and_replay(tmp_path):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)

    async def body(pilot):
        table = app.query_one("#runs-table")
        assert table.row_count == 3
        await pilot.click("#filter")
        await pilot.press(*"bbbb")
        assert table.row_count == 1
        await pilot.press(*" status=cancelled")
        assert table.row_count == 0
        app.query_one("#filter").value = "since=nonsense"
        await pilot.pause()
        app.query_one("#filter").value = ""
        await pilot.pause()
        assert table.row_count == 3
        table.focus()
        await pilot.press("down", "enter")  # newest first: C, then B
        await pilot.pause()
        assert app.view == "run" and app.query_one("RunView").run_id == B
        await pilot.press("escape")
        app.execute(f"/rlm replay {A[:-3]}")  # a unique prefix
        await pilot.pause()
        view, steps = app.query_one("RunView"), app.query_one("#steps")
        assert view.run_id == A and steps.count == 4
        await pilot.press("home", "n", "n", "p")
        assert steps.cursor == 1
        await pilot.press("home", "e")
        assert steps.cursor == 1 and "ZeroDivisionError" in str(app.query_one("#detail").render())
        await pilot.press("E")  # errors only
        assert steps.count == 1 and view.step_index(0) == 1
        await pilot.press("E")
        assert steps.count == 4
        await pilot.press("g")  # jump: the command line, prefilled
        await pilot.press(*"3", "enter")
        await pilot.pause()
        assert steps.cursor == 2, (app.last_message, app.query_one("#command").history)
        detail = str(app.query_one("#detail").render())
        assert "llm_query" in detail and "4217" in detail and "answer: str" in detail
        app.execute("/goto 99")
        assert "no step 99" in app.last_message
        app.execute(f"/rlm replay {C}")
        await pilot.pause()
        child = "run_20261116_020000_000001_dddd"
        assert steps.count == 3 and view.entry(1) == (child, 0, 1)  # the step tree: the child's step under step 1
        assert view._row(1).startswith("  ↳") and view._row(2).lstrip().startswith("2 final")
        await pilot.press("home", "down")
        assert "in child run" in str(app.query_one("#detail").render())
        await pilot.press("home", "o")  # the child run its first step started
        assert view.run_id == "run_20261116_020000_000001_dddd" and steps.count == 1
        await pilot.press("backspace")
        assert view.run_id == C
        title = str(app.query_one("#run-title").render())
        assert "[bold red]markup[/]" in title and "\x1b" not in title  # hostile text shown as text

    drive(app, body)


def test_a_steps_candidates_show_beside_the_kept_one(tmp_path):
    """Issue 49: a run made with ``--branch-width``: the step that tried candidates says how many in its row, and
    its detail lists each (action, score, tokens, code, output or error), the kept one marked; so does /compare."""
    home = tmp_path / ".rlm"
    run_id = "run_20261116_000000_000000_brch"
    write_run(home, run_id, [{"code": "print(1)"}, {"code": "x = 6 * 7", "stdout": "42\n", "branches": CANDIDATES},
                             {"code": "FINAL(x)", "final": True}])
    app = make_app(home)

    async def body(pilot):
        await pilot.resize_terminal(120, 40)
        app.execute(f"/rlm replay {run_id}")
        await pilot.pause()
        await pilot.press("home")
        await pilot.pause()
        steps = app.query_one("#steps")
        assert "[3 tried]" not in steps.render_line(0).text
        assert "candidates" not in str(app.query_one("#detail").render())
        await pilot.press("down")
        await pilot.pause()
        assert "[3 tried] x = 6 * 7" in steps.render_line(1).text
        detail = str(app.query_one("#detail").render())
        assert "candidates (3)" in detail and "▶ 2. run_code · score +0.80 · 41 tok · kept" in detail
        assert "1. run_code · score -0.20 · 40 tok · error" in detail and "✗ ZeroDivisionError" in detail
        assert "3. final · score +0.00 · 12 tok" in detail and "FINAL(41)" in detail
        app.execute(f"/compare {run_id} {run_id}")
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert all("candidates (3)" in str(side.render()) for side in app.query(".side-detail"))

    drive(app, body)


def test_bad_input_is_one_message(tmp_path):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)

    async def body(pilot):
        for line, says in [("/rlm replay run_nope", "no saved run"), ("/rlm replay run_2026", "matches"),
                           ("/warp 9", "unknown command"), ("/rlm run", "usage"),
                           ("/compare nope latest", "no saved run"),
                           ('/rlm run "x', "close the quotes"), ("/rlm replay /etc/passwd", "is a path"),
                           ('/rlm run "x" steps=many', "invalid run option: steps="),
                           ('/rlm run "x" max_steps=many', "invalid run option: max_steps="),
                           ('/rlm run "x" labels=nokey', "labels=nokey: "), ("/connect nowhere model", "nowhere"),
                           ("/rlm abort", "open a run to abort it"),
                           ("/rlm abort nothing", "no active run")]:
            await pilot.press("slash")
            app.query_one("#command").value = line
            await pilot.press("enter")
            await pilot.pause()
            assert says in app.last_message, (line, app.last_message)
        await pilot.press("up")  # history
        assert app.query_one("#command").value == "/rlm abort nothing"
        await pilot.press("up")
        assert app.query_one("#command").value == "/rlm abort"
        await pilot.press("down", "down")
        assert app.query_one("#command").value == ""

    drive(app, body)


def test_compare_two_runs_from_their_divergence(tmp_path):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)

    async def body(pilot):
        app.execute(f"/compare {A} {B}")
        await pilot.pause()
        assert app.view == "compare" and "diverge at step 2" in app.last_message
        summary = str(app.query_one("#summary").render())
        assert "diverge at step 2" in summary and "B − A" in summary
        left, right = app.query("Side VirtualList")
        assert left.cursor == right.cursor == 1
        await pilot.press("n")
        await pilot.pause()
        assert left.cursor == 2 and right.cursor == 2
        await pilot.press("d")
        await pilot.pause()
        assert left.cursor == 1

    drive(app, body)


def script(path: Path, replies: list) -> str:
    path.write_text(json.dumps({"responses": replies}))
    return f"scripted:{path}"


def test_start_a_run_from_the_command_line_and_watch_it(rlm_isolated):
    model = script(rlm_isolated.work / "s.json", [
        {"text": "```repl\nanswer = 6 * 7\nprint(answer)\n```", "delay": 0.3},
        {"text": "```repl\nprint(1/0)\n```", "delay": 0.3}, {"text": "FINAL(42)", "delay": 0.3}])
    app = make_app(rlm_isolated.runs)

    async def body(pilot):
        app.execute('/rlm run "What is six times seven?" steps=x')
        assert "invalid run option: steps=" in app.last_message, app.last_message
        app.execute("/sandbox nowhere")
        assert "nowhere" in app.last_message
        app.execute("/sandbox monty")
        app.execute(f"/connect {model}")
        assert "next runs use model" in app.last_message
        app.execute('/rlm run "What is six times seven?" steps=5 context="some text"')
        await wait_for(pilot, lambda: app.view == "run", what="the run to start")
        view = app.query_one("RunView")
        await wait_for(pilot, lambda: view.index is not None and view.index.live.finished, what="the run to end")
        await pilot.pause(0.3)
        assert app.query_one("#steps").count == 3
        assert "final" in str(app.query_one("#in-progress").render())
        assert "steps" in str(app.query_one("#meters").render()) and "3/5" in str(app.query_one("#meters").render())
        await pilot.press("home", "enter")
        detail = str(app.query_one("#detail").render())
        assert "answer = 6 * 7" in detail and "42" in detail and "answer: int" in detail
        await wait_for(pilot, lambda: "42" in app.last_message, what="the final answer")
        app.execute("/runs")
        await pilot.pause()
        assert app.query_one("#runs-table").row_count == 1

    drive(app, body)


def test_chat_turns_keep_the_session(rlm_isolated):
    model = script(rlm_isolated.work / "chat.json", ["```repl\nnote = 'kept'\nprint(note)\n```", "FINAL(first answer)"])
    second = script(rlm_isolated.work / "second.json", ["```repl\nprint('still ' + note)\n```", "FINAL(second answer)"])
    app = make_app(rlm_isolated.runs)

    async def body(pilot):
        app.execute(f"/connect {model}")
        app.execute("/sandbox monty")
        app.execute('/rlm chat "remember something"')
        await wait_for(pilot, lambda: "first answer" in app.last_message, what="the first turn")
        session = app.workspace.chat
        app.execute(f'/rlm chat "what did you keep?" model={second}')
        await wait_for(pilot, lambda: "second answer" in app.last_message, what="the second turn")
        assert app.workspace.chat is session and len(session.turns) == 2
        view = app.query_one("RunView")
        await wait_for(pilot, lambda: view.index is not None and view.index.live.finished, what="the turn's run")
        await pilot.press("home")
        assert "still kept" in str(app.query_one("#detail").render())  # the variable the first turn left

    drive(app, body)


def test_a_run_opened_before_its_file_exists_shows_up(tmp_path):
    from tui_support import write_run

    home = tmp_path / ".rlm"
    path = home / "runs" / "run_20261116_000000_000000_late.jsonl"
    app = make_app(home)

    async def body(pilot):
        app.follow(path)  # as /rlm run does when the run_start event comes before the file has it
        await pilot.pause(0.2)
        assert app.query_one("#steps").count == 0
        write_run(home, "run_20261116_000000_000000_late", [{"code": "print(1)"}, {"code": "FINAL(1)", "final": True}])
        await wait_for(pilot, lambda: app.query_one("#steps").count == 2, what="the steps")
        assert app.query_one("RunView").run_id == "run_20261116_000000_000000_late"

    drive(app, body)


def test_rlm_tui_run_opens_a_run_first(tmp_path):
    home = tmp_path / ".rlm"
    sample_home(home)
    app = RlmTui(Workspace(home=home, settings=None), Bench(cwd=tmp_path), open_run=B[:-2])

    async def body(pilot):
        assert app.view == "run" and app.query_one("RunView").run_id == B

    drive(app, body)


def test_a_run_without_final_whose_process_is_gone_shows_interrupted(tmp_path):
    import os

    from tui_support import write_run

    home = tmp_path / ".rlm"
    path = write_run(home, "run_20261116_000000_000000_dead", [{"code": "print(1)"}], finished=False)
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime - 3600))  # written an hour ago, not registered
    app = make_app(home)

    async def body(pilot):
        app.execute("/rlm replay run_20261116_000000_000000_dead")
        await pilot.pause()
        assert "interrupted: no final event" in str(app.query_one("#run-title").render())
        assert "was interrupted" in str(app.query_one("#in-progress").render())
        assert app.query_one("RunsView").runs[0].interrupted

    drive(app, body)


def test_typing_on_the_runs_table_goes_to_the_filter(tmp_path):
    """Issue 47: the filter took no typing until shift+Tab, though the browser said "type in the filter above"."""
    home = tmp_path / ".rlm"
    sample_home(home)
    app = make_app(home)

    async def body(pilot):
        table = app.query_one("#runs-table")
        assert app.focused is table and table.row_count == 3  # as the app opens
        await pilot.press(*"bbbb")
        assert app.query_one("#filter").value == "bbbb" and table.row_count == 1
        await pilot.press("down")  # back to the table
        assert app.focused is table
        await pilot.press("slash")  # a command key keeps its meaning
        assert app.focused is app.query_one("#command")

    drive(app, body)


def test_connect_sandbox_and_options_are_checked_when_typed(rlm_isolated):
    """Issue 47: /sandbox nosuch and /connect nosuchprov m were accepted ("checked at once") and failed at the next
    run; budget= was a raw KeyError."""
    model = script(rlm_isolated.work / "s.json", ["FINAL(1)"])
    app = make_app(rlm_isolated.runs)

    async def body(pilot):
        app.execute("/sandbox nosuch")
        assert "unknown sandbox 'nosuch'" in app.last_message and "next runs" not in app.last_message
        app.execute("/connect nosuchprov m")
        assert "nosuchprov" in app.last_message and "next runs" not in app.last_message, app.last_message
        app.execute("/connect scripted:missing.json")
        assert "missing.json" in app.last_message and "next runs" not in app.last_message, app.last_message
        assert app.workspace.overrides == {}
        app.execute('/rlm run "x" budget=5')
        assert "unknown run option budget=" in app.last_message and "KeyError" not in app.last_message
        app.execute(f"/connect {model}")
        assert app.last_message == f"next runs use model {model}"

    drive(app, body)


def test_the_seeds_rlm_doctor_and_harness_run(rlm_isolated):
    """Issue 47: the seeds' /rlm doctor and /harness run were missing."""
    project = rlm_isolated.work / "shop"
    project.mkdir()
    (project / "notes.md").write_text("nothing to do\n")
    model = script(rlm_isolated.work / "h.json", ['{"tool": "final", "args": {"answer": "nothing to do"}}'])
    app = RlmTui(Workspace(home=rlm_isolated.runs, settings=None), Bench(cwd=rlm_isolated.work))

    async def body(pilot):
        app.execute("/rlm doctor")
        await wait_for(pilot, lambda: app.view == "doctor", seconds=120, what="the doctor's report")
        shown = str(app.query_one("#doctor-text").render())
        # the doctor's own report: every check when one is not ready, else its one summary line
        assert " ready" in shown and ("problems" in shown or "sandbox" in shown), shown
        assert "rlm plugins doctor" in app.last_message
        app.execute(f'/harness run "Is there anything to do?" workdir=shop sandbox=process model={model}')
        await wait_for(pilot, lambda: "harness" in str(app.query_one("RunView").run_id or "") or "final" in
                       app.last_message or "failed" in app.last_message, what="the harness run")
        await wait_for(pilot, lambda: ": final" in app.last_message or "failed" in app.last_message, what="its end")
        assert ": final · nothing to do" in app.last_message, app.last_message

    drive(app, body)
