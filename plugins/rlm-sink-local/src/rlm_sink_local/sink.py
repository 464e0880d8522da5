"""The ``local`` sink: run and step summaries as JSON lines, readable without any service.

It writes, under ``<home>/observability`` (or ``[sink.local] directory``):

- ``runs.jsonl``: one line per finished run, root and child alike, from its ``final`` event (ids, depth, task,
  components, outcome, steps, reward, tokens per role, cost, duration);
- ``steps/<run_id>.jsonl``: one line per step (timestamp, run_id, step, action, reward, cumulative_reward,
  success).

Each line is appended with its own open/write/close, so lines are complete on disk as soon as they are written
and no file handle outlives a run. The full event stream lives in the run's trajectory
(``<home>/runs/<run_id>.jsonl``, written by the host).
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

from rlm_host import RunEvent, RunResult, Usage

RUNS_FILE = "runs.jsonl"
STEPS_DIR = "steps"


class LocalSinkSettings(BaseModel):
    """``[sink.local]``: where the files go."""

    model_config = ConfigDict(extra="forbid")

    directory: Optional[Path] = Field(None, description="output folder (default: <home>/observability)")


def _timestamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).isoformat()


def _file_name(run_id: str) -> str:
    """A run id made safe as a file name (ids from ``new_run_id`` are already)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id) or "run"


def _role_tokens(usage: Usage) -> dict[str, Any]:
    return {
        "calls": usage.calls,
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "total": usage.total_tokens,
    }


def _observation_error(observation: dict[str, Any]) -> bool:
    """Whether a step's observation records an error: its own ``error``, or a code block's error or time-out
    (the trajectory's step format, docs/schemas.md)."""
    if observation.get("error"):
        return True
    return any(isinstance(block, dict) and (block.get("error") or block.get("timed_out"))
               for block in observation.get("blocks") or [])


def step_success(data: dict[str, Any]) -> bool:
    """A step succeeded unless its observation records an error (or says so) or its action is ``error``."""
    observation = data.get("observation") or {}
    if data.get("action") == "error" or _observation_error(observation):
        return False
    return bool(observation.get("success", True))


class LocalJSONLSink:
    """Appends run summaries to ``runs.jsonl`` and step lines to ``steps/<run_id>.jsonl``."""

    def __init__(self, settings: Optional[LocalSinkSettings], home: Path) -> None:
        settings = settings or LocalSinkSettings()
        directory = settings.directory if settings.directory is not None else Path(home) / "observability"
        self.directory = Path(directory).expanduser()
        self.runs_file = self.directory / RUNS_FILE
        self.steps_dir = self.directory / STEPS_DIR
        self._cumulative: dict[str, float] = {}
        self._lock = threading.Lock()

    def handle(self, event: RunEvent) -> None:
        """Record ``step`` and ``final`` events; every other type is ignored."""
        if event.type == "step":
            self._step(event)
        elif event.type == "final":
            self._final(event)

    def close(self) -> None:
        """Forget per-run state (nothing is held open)."""
        with self._lock:
            self._cumulative.clear()

    def step_file(self, run_id: str) -> Path:
        return self.steps_dir / f"{_file_name(run_id)}.jsonl"

    def _step(self, event: RunEvent) -> None:
        data = event.data
        reward = float(data.get("reward") or 0.0)
        with self._lock:
            cumulative = self._cumulative[event.run_id] = self._cumulative.get(event.run_id, 0.0) + reward
            if isinstance(data.get("cumulative_reward"), (int, float)):
                cumulative = float(data["cumulative_reward"])  # the runner's own running total
            line = {
                "timestamp": _timestamp(event.ts),
                "run_id": event.run_id,
                "step": data.get("step"),
                "action": data.get("action"),
                "reward": reward,
                "cumulative_reward": round(cumulative, 6),
                "success": step_success(data),
            }
            _append(self.step_file(event.run_id), line)

    def _final(self, event: RunEvent) -> None:
        result = RunResult.model_validate(event.data)
        usage = result.usage
        line = {
            "timestamp": _timestamp(event.ts),
            "run_id": result.run_id or event.run_id,
            "root_run_id": event.root_run_id,
            "parent_run_id": result.parent_run_id if result.parent_run_id is not None else event.parent_run_id,
            "depth": event.depth,
            "task": result.task,
            "environment": result.environment,
            "framework": result.framework,
            "model": result.model,
            "sandbox": result.sandbox,
            "completed": result.completed,
            "termination_reason": result.termination_reason,
            "steps": result.steps,
            "total_reward": result.total_reward,
            "tokens": {"root": _role_tokens(usage.root), "sub": _role_tokens(usage.sub), "total": usage.total_tokens},
            "cost": result.cost if result.cost is not None else usage.cost,
            "duration": result.duration_s,
            "error": result.error,
        }
        with self._lock:
            _append(self.runs_file, line)
            self._cumulative.pop(event.run_id, None)


def _append(path: Path, record: dict[str, Any]) -> None:
    """One line appended to ``path``; a failed write (a full disk) names the file it could not write."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {path}: {exc.strerror or exc}") from None


def create(settings: Optional[LocalSinkSettings], services: Any) -> LocalJSONLSink:
    """The sink factory named by the ``local`` SinkSpec: ``create(settings, services)``."""
    return LocalJSONLSink(settings, services.home)
