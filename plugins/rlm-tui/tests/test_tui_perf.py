"""Responsiveness on a big run: opening a 10,000-step trajectory, and following a run that appends 100 events a
second. The figures are printed (``pytest -s``); the bounds are loose, for a loaded 2-core CI machine."""

from __future__ import annotations

import json
import threading
import time

from tui_support import TS0, drive, event, step_events, wait_for, write_run

from test_tui_app import make_app

STEPS = 10_000


def big_run(home, run_id: str, steps: int) -> None:
    path = write_run(home, run_id, [], finished=False, max_steps=steps)
    seq, lines = 2, []
    for number in range(1, steps + 1):
        error = "ValueError: bad" if number % 1000 == 0 else None
        for kind, data in step_events(run_id, number, code=f"print({number})", stdout=f"{number}\n", error=error):
            lines.append(json.dumps(event(kind, run_id, seq, data, ts=TS0 + number), separators=(",", ":")))
            seq += 1
    with path.open("a") as out:
        out.write("\n".join(lines) + "\n")


def test_open_a_10000_step_run_and_move_around(tmp_path):
    home = tmp_path / ".rlm"
    run_id = "run_20261116_000000_000000_big0"
    big_run(home, run_id, STEPS)
    app = make_app(home)

    async def body(pilot):
        started = time.perf_counter()
        app.execute(f"/rlm replay {run_id}")
        await pilot.pause()
        opened = time.perf_counter() - started
        steps = app.query_one("#steps")
        assert steps.count == STEPS
        started = time.perf_counter()
        await pilot.press("end")
        await pilot.pause()
        to_end = time.perf_counter() - started
        assert steps.cursor == STEPS - 1
        started = time.perf_counter()
        await pilot.press("E")  # errors only: parses every step once
        await pilot.pause()
        errors = time.perf_counter() - started
        assert steps.count == 10
        index = app.query_one("RunView").opened_seconds
        events = sum(1 for _ in (home / "runs" / f"{run_id}.jsonl").open("rb"))
        print(f"\n10,000-step trajectory ({events:,} events): opened in {opened:.2f}s "
              f"(reading and indexing {index:.2f}s: "
              f"{events / index:,.0f} events/s), end key {to_end * 1000:.0f} ms, errors-only filter {errors:.2f}s")
        assert opened < 10 and to_end < 2

    drive(app, body)


def test_follow_a_run_appending_100_events_a_second(tmp_path):
    home = tmp_path / ".rlm"
    run_id = "run_20261116_000000_000000_live"
    path = write_run(home, run_id, [], finished=False, max_steps=1000)
    app = make_app(home)
    per_step = len(step_events(run_id, 1, code="x"))
    total_steps, rate = 60, 100.0  # 60 steps × 6 events = 360 events at 100/s: about 3.6 s
    written = threading.Event()

    def writer() -> None:
        seq, begin = 2, time.perf_counter()
        with path.open("a", buffering=1) as out:
            for number in range(1, total_steps + 1):
                for kind, data in step_events(run_id, number, code=f"print({number})"):
                    out.write(json.dumps(event(kind, run_id, seq, data, ts=time.time()), separators=(",", ":")) + "\n")
                    out.flush()
                    seq += 1
                    time.sleep(max(0.0, begin + (seq - 2) / rate - time.perf_counter()))  # paced, not drifting
        written.set()

    async def body(pilot):
        app.execute(f"/rlm replay {run_id}")
        await pilot.pause()
        view, steps = app.query_one("RunView"), app.query_one("#steps")
        assert view.live and steps.follow
        thread = threading.Thread(target=writer)
        started = time.perf_counter()
        thread.start()
        worst = 0.0
        while not written.is_set():  # keys stay answered while events pour in
            before = time.perf_counter()
            await pilot.press("f")
            await pilot.pause()
            worst = max(worst, time.perf_counter() - before)
            await pilot.pause(0.1)
        done_writing = time.perf_counter()
        await wait_for(pilot, lambda: steps.count == total_steps, what="every step on screen")
        lag = time.perf_counter() - done_writing
        thread.join()
        seconds = done_writing - started
        events = total_steps * per_step
        assert steps.cursor == total_steps - 1  # followed to the newest step
        print(f"\nfollowing: {events} events in {seconds:.1f}s ({events / seconds:.0f} events/s written), all shown "
              f"{lag * 1000:.0f} ms after the last; slowest key round trip meanwhile {worst * 1000:.0f} ms")
        assert lag < 2 and worst < 1.0

    drive(app, body)
