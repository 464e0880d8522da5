"""One ``rlm_run`` call: the run in a worker thread, a progress notification per root step, and cancellation.

The run stops (its trajectory ends with ``termination_reason="cancelled"``) when the tool's task is cancelled
(the client cancelled the request, or a stdio client went away) or when ``gone()`` says the HTTP client's
connection closed; either way the call waits for the run's final event before it returns.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Awaitable, Callable, Optional

import anyio

from rlm_host import RLM, RunEvent, RunResult

from rlm_mcp.models import RunOutput

Progress = Callable[[float, Optional[float], str], Awaitable[None]]

#: Seconds between checks of the client's connection while a run goes on.
POLL_SECONDS = 0.2
#: Seconds a cancelled run may take to write its final event before the call gives up waiting.
CANCEL_GRACE_SECONDS = 60.0
_DONE = object()


def step_message(data: dict[str, Any]) -> str:
    """``step 3: run_code print(len(context))``: a step's number, action and the first line of its code."""
    first = (data.get("code") or data.get("reply") or "").strip().splitlines()
    detail = first[0][:80] if first else ""
    return f"step {data.get('step', '?')}: {data.get('action', '?')} {detail}".rstrip()


async def run_with_progress(rlm: RLM, context: Any, query: str, options: dict[str, Any], progress: Progress,
                            gone: Callable[[], bool] = lambda: False) -> RunResult:
    """Run ``query`` over ``context``; report each root step; cancel the run if this task is cancelled or
    ``gone()`` turns true. Returns the ``RunResult`` (a cancelled run's too, when ``gone()`` stopped it)."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue = asyncio.Queue()  # root run_start and step events, then _DONE
    cancel = threading.Event()
    finished = asyncio.Event()
    outcome: dict[str, Any] = {}

    def on_event(event: RunEvent) -> None:
        if event.depth == 0 and event.type in ("run_start", "step"):
            loop.call_soon_threadsafe(events.put_nowait, event)

    def work() -> None:
        try:
            outcome["result"] = rlm.completion(context, query, cancel=cancel, on_event=on_event, **options)
        except BaseException as exc:  # noqa: BLE001 - raised in the tool's task
            outcome["error"] = exc
        finally:
            loop.call_soon_threadsafe(finished.set)
            loop.call_soon_threadsafe(events.put_nowait, _DONE)

    threading.Thread(target=work, name="rlm-mcp-run", daemon=True).start()
    total: Optional[float] = options.get("max_steps")
    try:
        while True:
            try:
                event = await asyncio.wait_for(events.get(), POLL_SECONDS)
            except asyncio.TimeoutError:
                event = None
            if event is _DONE:
                break
            if gone() and not cancel.is_set():
                cancel.set()
            if event is None or cancel.is_set():
                continue
            if event.type == "run_start":
                total = total or (event.data.get("settings") or {}).get("max_steps")
                continue
            try:
                await progress(float(event.data.get("step", 0)), total, step_message(event.data))
            except Exception:  # noqa: BLE001 - the client is gone: stop the run
                cancel.set()
    except anyio.get_cancelled_exc_class():
        cancel.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE_SECONDS):
            await finished.wait()  # the cancelled run writes its final event
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def to_output(result: RunResult) -> RunOutput:
    """The tool's structured result; ``trajectory_path`` made absolute."""
    path = result.trajectory_path
    return RunOutput(run_id=result.run_id, final_response=result.final_response, completed=result.completed,
                     termination_reason=result.termination_reason, steps=result.steps,
                     tokens=result.usage.total_tokens, cost=result.cost, duration_s=result.duration_s,
                     trajectory_path=str(Path(path).resolve()) if path else None, error=result.error)
