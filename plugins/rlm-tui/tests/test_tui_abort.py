"""Aborting through the host's registry of active runs (``ActiveRuns``): a run of another thread with
``/rlm abort PREFIX``, one started in the TUI with ctrl+x from its live view; both end ``cancelled``."""

from __future__ import annotations

import json
import threading
import time

from rlm_host.sdk.embedding import RLM
from tui_support import drive, wait_for

from test_tui_app import make_app


def slow_model(path, steps: int = 30, delay: float = 0.5) -> str:
    replies = [{"text": f"```repl\nprint({i})\n```", "delay": delay} for i in range(steps)] + ["FINAL(done)"]
    path.write_text(json.dumps({"responses": replies}))
    return f"scripted:{path}"


def test_abort_a_run_elsewhere_and_one_started_here(rlm_isolated):
    model = slow_model(rlm_isolated.work / "slow.json")
    results: list = []
    other = RLM(model=model, sandbox="monty", home=rlm_isolated.runs, max_steps=30)
    thread = threading.Thread(target=lambda: results.append(other.completion(None, "a slow task elsewhere")))
    thread.start()
    app = make_app(rlm_isolated.runs)

    async def body(pilot):
        await wait_for(pilot, lambda: [r for r in app.workspace.active() if r.status == "active"],
                       what="the other run to register")
        run_id = app.workspace.active()[0].run_id
        await pilot.press("f3")  # follow the run of the other thread, live
        view = app.query_one("RunView")
        assert app.view == "run" and view.run_id == run_id
        await wait_for(pilot, lambda: app.query_one("#steps").count >= 1, what="its first step, live")
        assert view.live and "[running]" in str(app.query_one("#run-title").render())
        app.execute("/rlm abort run_nothing_like_it")
        assert "no active run matches" in app.last_message
        app.show_runs()
        assert "running" in str(app.query_one("#runs-table").get_row_at(0))
        app.execute(f"/rlm abort {run_id[:-2]}")
        assert f"{run_id}: cancelling" in app.last_message
        await wait_for(pilot, lambda: bool(results), what="the other run to stop")
        assert results[0].termination_reason == "cancelled"

        app.execute("/sandbox monty")
        app.execute(f'/rlm run "a slow task here" model={model} steps=30')
        await wait_for(pilot, lambda: app.view == "run" and app.query_one("RunView").index is not None,
                       what="the TUI's run to start")
        await wait_for(pilot, lambda: view.index.live.steps >= 1, what="a first step")
        assert "▶" in str(app.query_one("#in-progress").render())  # the call in progress
        await pilot.press("ctrl+x")
        await wait_for(pilot, lambda: view.index.live.finished, what="the TUI's run to stop")
        assert view.index.live.final["termination_reason"] == "cancelled"
        await pilot.pause(0.3)
        assert "cancelled" in str(app.query_one("#in-progress").render())
        await wait_for(pilot, lambda: not [r for r in app.workspace.active() if r.status == "active"],
                       what="the registry to empty")
        app.execute("/rlm abort all")
        assert app.last_message == "asked 0 run(s) to stop"

    try:
        drive(app, body)
    finally:
        thread.join(timeout=30)


def test_leaving_the_app_cancels_its_own_runs_so_they_end_cancelled_not_dead(rlm_isolated):
    model = slow_model(rlm_isolated.work / "slow2.json")
    app = make_app(rlm_isolated.runs)
    finished: list = []
    app.workspace.start_run("a slow task", None, {"model": model, "sandbox": "monty", "max_steps": "30"},
                            lambda run_id, path: None,
                            lambda result, error: finished.append((result, error)))
    wait_until = time.monotonic() + 20
    while not app.workspace.active() and time.monotonic() < wait_until:
        time.sleep(0.05)
    assert app.workspace.active(), "the run registered"
    assert app.workspace.stop_own() == []
    result, error = finished[0]
    assert error is None and result.termination_reason == "cancelled"
    assert app.workspace.active() == []
