"""Saved runs for ``rlm_runs_list`` and ``rlm_runs_show``, read with the host's public ``RunStore``; runs in progress
for ``rlm_runs_active`` and ``rlm_runs_cancel``, through the host's registry (``ActiveRuns``, as
``rlm runs cancel``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

from rlm_host import RunResult, StepRecord
from rlm_host.sdk.embedding import ActiveRuns, RunStore

from rlm_mcp.models import ActiveList, ActiveRunOut, RunDetail, RunsList, RunSummaryOut, StepOut

#: Characters kept of a step's code, output and reply, and of a final answer, in ``rlm_runs_show``.
CODE_CHARS = 2000
OUTPUT_CHARS = 2000
REPLY_CHARS = 1000
MAX_STEPS_SHOWN = 50


def cut(text: Optional[str], limit: int) -> Optional[str]:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters]"


def list_runs(home: Path, limit: int) -> RunsList:
    """The newest ``limit`` saved runs (0: all)."""
    summaries = RunStore(home).list_runs()
    shown = summaries[:limit] if limit > 0 else summaries
    return RunsList(runs=[_summary(s) for s in shown], total=len(summaries))


def _summary(s: Any) -> RunSummaryOut:
    return RunSummaryOut(run_id=s.run_id, task=s.task, model=s.model, environment=s.environment,
                         started=s.started.isoformat() if s.started else None, completed=s.completed,
                         termination_reason=s.termination_reason, steps=s.steps, tokens=s.tokens, cost=s.cost,
                         duration_s=s.duration)


def show_run(home: Path, run_id: str) -> RunDetail:
    """One saved run (an id, a unique prefix or ``latest``; never a path) with its root steps."""
    if "/" in run_id or "\\" in run_id or run_id.endswith(".jsonl"):
        raise ValueError("give a run id (or a prefix of one, or 'latest'), not a path")
    store = RunStore(home)
    path = store.resolve(run_id)
    summary = store.summarize(path)
    events = store.load(path)
    root = events[0].root_run_id if events else summary.run_id
    steps: list[StepOut] = []
    result: Optional[RunResult] = None
    sub_calls = 0
    for event in events:
        if event.type == "sub_call":
            sub_calls += 1
        if event.run_id != root:
            continue
        if event.type == "step":
            try:
                steps.append(_step(StepRecord.model_validate(event.data)))
            except ValueError:
                continue
        elif event.type == "final":
            try:
                result = RunResult.model_validate(event.data)
            except ValueError:
                pass
    detail = RunDetail(**_summary(summary).model_dump(), trajectory_path=str(Path(path).resolve()),
                       sub_calls=sub_calls, steps_detail=steps[-MAX_STEPS_SHOWN:])
    if result is not None:
        detail.final_response = cut(result.final_response, OUTPUT_CHARS)
        detail.error = result.error
    return detail


def _step(record: StepRecord) -> StepOut:
    return StepOut(step=record.step, action=record.action, code=cut(record.code, CODE_CHARS),
                   output=cut(observation_text(record.observation), OUTPUT_CHARS),
                   reply=cut(record.reply, REPLY_CHARS) if not record.code else None,
                   tokens=record.usage.total_tokens, duration_s=record.duration_s)


def observation_text(observation: dict[str, Any]) -> Optional[str]:
    """What a step's code printed (stdout, stderr, errors of each block), else the observation as JSON."""
    blocks = observation.get("blocks")
    if isinstance(blocks, list):
        parts = []
        for block in blocks:
            if isinstance(block, dict):
                parts += [str(block[k]) for k in ("stdout", "stderr", "error") if block.get(k)]
        return "".join(parts) or None
    rest = {k: v for k, v in observation.items() if k != "success"}
    return json.dumps(rest, default=str, ensure_ascii=False) if rest else None


def active_runs() -> ActiveList:
    """The runs in progress on this machine of the user the server runs as, whichever process and folder started
    them (a dead one says so)."""
    return ActiveList(runs=[_active(run) for run in ActiveRuns().list()])


def cancel_run(run_id: str) -> ActiveList:
    """Cancel a run this server started (an id or unique prefix, or ``all``: every one of them). A client may not
    stop runs of other processes: those belong to other people's terminals and programs."""
    registry = ActiveRuns()
    own = [run for run in registry.list() if run.pid == os.getpid() and run.status != "dead"]
    chosen = own if run_id == "all" else [run for run in own if run.run_id.startswith(run_id)] if run_id else []
    if run_id != "all" and len(chosen) != 1:
        raise ValueError(f"no run of this server matches {run_id!r}" if not chosen else
                         f"{run_id!r} matches {len(chosen)} runs of this server; give more of the id")
    return ActiveList(runs=[_active(registry.cancel(run.run_id)) for run in chosen])


def _active(run: Any) -> ActiveRunOut:
    return ActiveRunOut(run_id=run.run_id, status=run.status, task=run.task, model=run.model,
                        environment=run.environment, started=run.started.isoformat(), command=run.command,
                        own=run.pid == os.getpid())
