"""Shared helpers of the rlm-tui tests: deterministic trajectory files, a Pilot driver, SVG snapshot comparison."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

SNAPSHOTS = Path(__file__).parent / "snapshots"
TS0 = 1_795_000_000.0  # 2026-11-16, fixed so snapshots do not move


def event(kind: str, run_id: str, seq: int, data: dict[str, Any], *, ts: float, root: Optional[str] = None,
          parent: Optional[str] = None, depth: int = 0, operation: Optional[str] = None) -> dict[str, Any]:
    return {"type": kind, "operation": operation, "run_id": run_id, "root_run_id": root or run_id,
            "parent_run_id": parent, "depth": depth, "seq": seq, "ts": ts, "data": data}


def step_events(run_id: str, number: int, *, code: str, stdout: str = "", error: Optional[str] = None,
                reward: float = 0.1, cumulative: float = 0.0, ts: float = TS0, sub_call: bool = False,
                final: bool = False,
                branches: tuple[dict[str, Any], ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    """The live and recorded events of one native step (types and data as the host writes them); ``branches``: the
    candidates it tried (``--branch-width``), each a ``branch`` event's data, written before the step."""
    usage = {"root": {"calls": 1, "input_tokens": 900 + number, "output_tokens": 30, "cost": 0.0001,
                      "unpriced_calls": 0}, "sub": {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                                    "cost": None, "unpriced_calls": 0}}
    out: list[tuple[str, dict[str, Any]]] = [
        ("step_start", {"step": number}),
        ("model_call_start", {"call": number * 10, "role": "root", "model": "scripted:root", "provider": "scripted",
                              "purpose": "turn"}),
        ("model_call_end", {"call": number * 10, "role": "root", "model": "scripted:root", "provider": "scripted",
                            "purpose": "turn", "input_tokens": 900 + number, "output_tokens": 30, "cost": 0.0001,
                            "seconds": 0.5}),
    ]
    if not final:
        out.append(("code_start", {"call": number * 10 + 1, "step": number, "block": 1, "code": code}))
        if sub_call:
            out.append(("sub_call", {"kind": "llm_query", "model": "scripted:sub", "provider": "scripted",
                                     "prompt": "Extract the number", "prompt_hash": "abc", "response": "4217",
                                     "usage": {"input_tokens": 15, "output_tokens": 1}, "seconds": 0.2}))
        out.append(("code_end", {"call": number * 10 + 1, "step": number, "block": 1, "ok": error is None,
                                 "seconds": 0.01, "error": error, "final": False}))
    out += [("branch", {"step": number, **tried}) for tried in branches]
    block = {"code": code, "stdout": stdout, "duration_s": 0.01, **({"error": error} if error else {})}
    observation = ({"blocks": [], "success": True, "final_source": "text"} if final else
                   {"blocks": [block], "success": error is None,
                    "variables": [{"name": "answer", "type": "str", "size": 4, "repr": "'4217'"}]})
    out.append(("step", {"step": number, "action": "final" if final else "run_code", "code": None if final else code,
                         "reply": f"```repl\n{code}\n```" if not final else code, "observation": observation,
                         "reward": reward, "cumulative_reward": cumulative, "usage": usage, "model_seconds": 0.5,
                         "duration_s": 0.6}))
    return out


def write_run(home: Path, run_id: str, steps: list[dict[str, Any]], *, task: str = "What is the magic number?",
              finished: bool = True, ts: float = TS0, model: str = "scripted:root", max_steps: int = 10,
              reason: str = "final", child: Optional[str] = None, labels: Optional[dict[str, str]] = None,
              answer: str = "4217") -> Path:
    """A trajectory file under ``home/runs`` with ``steps`` (``step_events`` keyword arguments), fixed times;
    ``labels`` are the run's (``[run] labels``), ``answer`` its final response."""
    path = home / "runs" / f"{run_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = []
    now = ts

    def add(kind: str, data: dict[str, Any], run: str = run_id, **extra: Any) -> None:
        nonlocal now
        now += 0.25
        lines.append(event(kind, run, len(lines) + 1, data, ts=now, root=run_id, **extra))

    add("run_start", {"schema_version": 2, "task": task, "environment": "pure_rlm", "framework": "native",
                      "model": model, "provider": "scripted", "sandbox": "monty",
                      "settings": {"max_steps": max_steps, "timeout": 600.0, "max_cost": 0.05, "max_tokens": None,
                                   **({"labels": labels} if labels else {})}})
    cumulative = 0.0
    for number, spec in enumerate(steps, 1):
        cumulative += spec.get("reward", 0.1)
        if child and number == 1:
            add("child_run_start", {"child_run_id": child, "task": "a sub task", "depth": 1})
            add("run_start", {"schema_version": 2, "task": "a sub task", "environment": "pure_rlm",
                              "model": model, "settings": {}}, run=child, parent=run_id, depth=1)
            for kind, data in step_events(child, 1, code="FINAL('x')", final=True):
                add(kind, data, run=child, parent=run_id, depth=1)
            add("final", {"run_id": child, "completed": True, "final_response": "x", "termination_reason": "final",
                          "steps": 1}, run=child, parent=run_id, depth=1)
            add("child_run_end", {"child_run_id": child, "completed": True, "termination_reason": "final"})
        for kind, data in step_events(run_id, number, cumulative=round(cumulative, 4), **spec):
            add(kind, data)
    if finished:
        add("final", {"schema_version": 2, "run_id": run_id, "task": task, "environment": "pure_rlm",
                      "framework": "native", "model": model, "sandbox": "monty", "completed": reason == "final",
                      "final_response": answer, "steps": len(steps), "total_reward": round(cumulative, 4),
                      "usage": {"root": {"calls": len(steps), "input_tokens": 900 * len(steps),
                                         "output_tokens": 30 * len(steps), "cost": 0.0001 * len(steps),
                                         "unpriced_calls": 0},
                                "sub": {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": None,
                                        "unpriced_calls": 0}},
                      "cost": 0.0001 * len(steps), "cost_complete": True, "duration_s": 0.6 * len(steps),
                      "termination_reason": reason, "trajectory_path": str(path)})
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))  # as the host writes
    return path


#: Three small runs: two that diverge at step 2 (one with an error step), one with a child run.
def sample_home(home: Path) -> dict[str, Path]:
    a = [{"code": "print(len(context))", "stdout": "2000\n"},
         {"code": "x = 1/0", "error": "ZeroDivisionError: division by zero", "reward": -0.2},
         {"code": "answer = llm_query('Extract the number')", "sub_call": True, "stdout": "4217\n"},
         {"code": "FINAL(4217)", "final": True, "reward": 1.0}]
    b = [a[0], {"code": "answer = context.split()[-1]", "stdout": ""}, a[3]]
    return {"a": write_run(home, "run_20261116_000000_000000_aaaa", a),
            "b": write_run(home, "run_20261116_010000_000000_bbbb", b, ts=TS0 + 3600),
            "c": write_run(home, "run_20261116_020000_000000_cccc", [a[0], a[3]], ts=TS0 + 7200,
                           task="Delegate <b>[bold red]markup[/]</b> \x1b[31mred",
                           child="run_20261116_020000_000001_dddd")}


#: The candidates of a step run with ``--branch-width 3`` (``branch`` events' data): the second one kept.
CANDIDATES = ({"candidate": 1, "reply": "```repl\nx = 1/0\n```", "action": "run_code", "code": "x = 1/0", "output": "",
               "error": "ZeroDivisionError: division by zero", "score": -0.2, "chosen": False, "tokens": 40},
              {"candidate": 2, "reply": "```repl\nx = 6 * 7\n```", "action": "run_code", "code": "x = 6 * 7",
               "output": "42\n", "error": None, "score": 0.8, "chosen": True, "tokens": 41},
              {"candidate": 3, "reply": "FINAL(41)", "action": "final", "code": None, "output": "", "error": None,
               "score": 0.0, "chosen": False, "tokens": 12})


def drive(app: Any, body: Callable[[Any], Awaitable[None]], size: tuple[int, int] = (80, 24)) -> None:
    """Run ``body(pilot)`` against ``app`` headless (sync tests: no pytest-asyncio needed)."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await body(pilot)

    asyncio.run(main())


async def wait_for(pilot: Any, condition: Callable[[], bool], seconds: float = 20.0, what: str = "") -> None:
    """Pause the pilot until ``condition()`` holds (a run's thread or a subprocess getting there)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or condition}")
        await pilot.pause(0.05)


# ---------------------------------------------------------------------------------------- snapshots

def normalise_svg(svg: str) -> str:
    """An exported screenshot without what changes run to run: Textual's random terminal ids and class names."""
    ids = {}
    for found in re.findall(r"terminal-(\d+)", svg):
        ids.setdefault(found, str(len(ids)))
    svg = re.sub(r"terminal-(\d+)", lambda m: f"terminal-{ids[m.group(1)]}", svg)
    return svg


def check_snapshot(app: Any, name: str) -> None:
    """Compare the app's screen with ``snapshots/<name>.svg``; ``RLM_UPDATE_SNAPSHOTS=1`` writes it instead."""
    svg = normalise_svg(app.export_screenshot(title="rlm tui"))
    path = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("RLM_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(exist_ok=True)
        missing = not path.exists()
        path.write_text(svg)
        assert not missing or os.environ.get("RLM_UPDATE_SNAPSHOTS") == "1", f"wrote the new snapshot {path}: commit it"
        return
    expected = path.read_text()
    if svg != expected:
        text_now, text_then = svg_text(svg), svg_text(expected)
        raise AssertionError(f"screen {name} changed (RLM_UPDATE_SNAPSHOTS=1 to accept):\n--- committed\n{text_then}"
                             f"\n--- now\n{text_now}")


async def settled(pilot: Any, app: Any, seconds: float = 5.0) -> None:
    """Wait until the screen stops changing (two screenshots alike after a pause), at most ``seconds``: a view
    drawn in steps (a comparison, a table filled by a worker) is compared once it is done, even on a busy machine."""
    import time

    deadline = time.monotonic() + seconds
    before = None
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        now = normalise_svg(app.export_screenshot(title="rlm tui"))
        if now == before:
            return
        before = now


def svg_text(svg: str) -> str:
    """The text lines of an exported screenshot, for a readable failure."""
    import html

    rows: dict[str, list[str]] = {}
    for y, text in re.findall(r'<text[^>]*\by="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(y, []).append(html.unescape(re.sub(r"<[^>]+>", "", text)))
    return "\n".join("".join(parts) for _, parts in sorted(rows.items(), key=lambda item: float(item[0])))
