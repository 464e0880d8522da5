"""``approve=ask`` in the TUI (issue 34): each write waits in a modal for y or n, from the run's worker thread;
a refused write is a step the model sees, and the file is untouched."""

from __future__ import annotations

import json

from tui_support import drive, wait_for

from test_tui_app import make_app


def test_a_write_waits_for_the_person_in_a_modal_then_goes_ahead_or_not(rlm_isolated):
    project = rlm_isolated.work / "project"
    project.mkdir()
    writes = [{"action": "write_file", "path": "a.py", "content": "x = 1\n\x1b[2J"},
              {"action": "write_file", "path": "b.py", "content": "y = 2\n"},
              {"action": "final", "final_response": "done"}]  # fmt: skip
    script = rlm_isolated.work / "writes.json"
    script.write_text(json.dumps({"responses": [json.dumps(w) for w in writes]}))
    app = make_app(rlm_isolated.runs)
    finished: list = []

    async def body(pilot):
        app.workspace.start_run("write two files", None, {
            "model": f"scripted:{script}", "environment": "dspy", "workdir": str(project), "sandbox": "process",
            "approve": "ask", "max_steps": "3"}, lambda run_id, path: None,
            lambda result, error: finished.append((result, error)))  # fmt: skip
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ApprovalScreen", what="the first question")
        shown = str(app.screen.query_one("#approval-text").render())
        assert "write_file wants to write" in shown and "a.py" in shown and "x = 1" in shown
        assert "\x1b" not in shown and "␛[2J" in shown  # the model's escape sequence is shown, not sent
        await pilot.press("y")
        await wait_for(pilot, lambda: app.screen.__class__.__name__ == "ApprovalScreen" and
                       "b.py" in str(app.screen.query_one("#approval-text").render()), what="the second question")
        await pilot.press("n")
        await wait_for(pilot, lambda: bool(finished), what="the run to end")

    drive(app, body)
    result, error = finished[0]
    assert error is None and result.final_response == "done"
    assert (project / "a.py").exists() and not (project / "b.py").exists()
    steps = [json.loads(line)["data"] for line in open(result.trajectory_path)
             if json.loads(line)["type"] == "step"]  # fmt: skip
    assert "refused" not in steps[0]["observation"] and steps[1]["observation"]["refused"]
    assert "refused by the user" in steps[1]["observation"]["error"]
