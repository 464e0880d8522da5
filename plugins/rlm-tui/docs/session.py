"""The README's session, for real: a scripted model finds a number in a haystack, twice, and a small benchmark
runs; the app is driven headless at 80×24 and each screen saved as SVG next to this file.

    .venv/bin/python plugins/rlm-tui/docs/session.py      # rewrites plugins/rlm-tui/docs/*.svg, prints the session

Runs in a temporary folder (its own run home); needs the monty sandbox and the rlm-bench plugin installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path

from rlm_tui.app import RlmTui
from rlm_tui.bench import Bench
from rlm_tui.workspace import Workspace

HERE = Path(__file__).parent
FIND = "```repl\nidx = context.find('magic number')\nprint(idx, len(context))\n```"
ASK = "```repl\nanswer = llm_query('Extract the number: ' + context[idx:idx+40])\nprint(answer)\n```"
SLICE = "```repl\nanswer = context[idx+16:idx+20]\nprint(answer)\n```"


def scripted(path: Path, replies: list, delay: float = 0.0, rules: list = ()) -> str:
    items = [{"text": text, "delay": delay} for text in replies]
    path.write_text(json.dumps({"responses": items, "rules": list(rules)}))
    return f"scripted:{path}"


async def wait(pilot, condition, seconds: float = 60) -> None:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise TimeoutError("the session did not get there")


async def session(work: Path) -> None:
    filler = "lorem ipsum dolor sit amet " * 400
    (work / "haystack.txt").write_text(filler[:5000] + "The magic number is 4217." + filler[5000:])
    scripted(work / "root.json", [FIND, ASK, "FINAL_VAR(answer)"], delay=0.8)
    other = scripted(work / "other.json", [FIND, SLICE, "FINAL_VAR(answer)"])
    sub = scripted(work / "sub.json", [], rules=[{"match": "Extract", "text": "4217"}])
    bench = scripted(work / "bench.json", [], rules=[{"match": ".", "text": "FINAL(42)"}])
    app = RlmTui(Workspace(home=work / ".rlm", settings=None), Bench(cwd=work))
    app.animation_level = "none"

    def typed(line: str) -> None:
        print(f"  {line}\n      → {app.last_message}" if line else f"      → {app.last_message}")

    async with app.run_test(size=(80, 24)) as pilot:
        for line in ["/sandbox monty", f"/connect scripted {work / 'root.json'}"]:
            app.execute(line)
            typed(line.replace(str(work) + "/", ""))
        line = f'/rlm run "What is the magic number?" context=haystack.txt steps=6 sub_model={sub}'
        app.execute(line)
        typed(line.replace(str(work) + "/", ""))
        view = app.query_one("RunView")
        await wait(pilot, lambda: view.index is not None and view.index.live.steps >= 1 and view.index.live.in_progress)
        await pilot.pause(0.1)
        app.save_screenshot("live.svg", path=str(HERE))
        await wait(pilot, lambda: view.index.live.finished)
        await pilot.pause(0.3)
        typed("")
        await pilot.press("home", "down")
        await pilot.pause()
        app.save_screenshot("run.svg", path=str(HERE))
        first = view.index.root_id
        app.execute(f"/connect {other}")
        app.execute('/rlm run "What is the magic number?" context=haystack.txt steps=6')
        await wait(pilot, lambda: view.index.root_id != first and view.index.live.finished)
        await pilot.pause(0.3)
        line = f"/compare {first} {view.index.root_id}"
        app.execute(line)
        typed(line)
        await pilot.pause()
        app.save_screenshot("compare.svg", path=str(HERE))
        line = f"/rlm bench preset=pure_rlm_smoke limit=2 model={bench} sandbox=monty"
        app.execute(line)
        typed(line.replace(str(work) + "/", ""))
        bench_view = app.query_one("BenchView")
        await wait(pilot, lambda: bench_view.progress is not None and bench_view.progress.finished, 120)
        await wait(pilot, lambda: app.query_one("#board").row_count > 0)
        typed("")
        app.focus_view()
        await pilot.press("l")
        await pilot.pause(0.5)
        app.save_screenshot("bench.svg", path=str(HERE))
        app.execute("/runs")
        await pilot.pause()
        app.save_screenshot("runs.svg", path=str(HERE))
        for line in ["/rlm replay run_nope", "/rlm run \"x\" steps=many", "/warp"]:
            app.execute(line)
            typed(line)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        os.chdir(work)
        asyncio.run(session(work))
