"""The ``plugin-template-csv`` sink: one CSV row per finished run, root and child runs alike.

A sink is built once per run tree as ``create(settings, services)`` and gets every event in order through
``handle``, from a thread of its own (the host queues events, so a slow sink never slows the run); it must never
raise for an event it does not know. See "Writing an observability sink" in the README.
"""

from __future__ import annotations

import csv
import threading
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import HostServices, RunEvent, RunResult

COLUMNS = ("run_id", "parent_run_id", "depth", "task", "completed", "termination_reason", "steps", "total_reward",
           "tokens", "cost", "duration_s")


class CsvSinkSettings(BaseModel):
    """``[sink.plugin-template-csv]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    path: Optional[Path] = Field(None, description="the CSV file (default: <run home>/runs.csv)")


def output_path(settings: Optional[CsvSinkSettings], home: Path) -> Path:
    """Where the rows go: the configured file, else ``runs.csv`` in the run home."""
    configured = settings.path if settings is not None else None
    return Path(configured).expanduser() if configured is not None else Path(home) / "runs.csv"


class CsvSink:
    """Appends a row when a run's ``final`` event arrives; writes the header once per new file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def handle(self, event: RunEvent) -> None:
        if event.type != "final":
            return
        result = event.payload()  # the final event's data as the typed RunResult
        assert isinstance(result, RunResult)
        row = {**{column: getattr(result, column, None) for column in COLUMNS}, "run_id": event.run_id,
               "depth": event.depth, "parent_run_id": event.parent_run_id or "",
               "tokens": result.usage.total_tokens}
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists()
            with self.path.open("a", newline="", encoding="utf-8") as handle:
                writer = csv.DictWriter(handle, fieldnames=COLUMNS)
                if new:
                    writer.writeheader()
                writer.writerow(row)

    def close(self) -> None:
        """Nothing is held open between rows."""


def create(settings: Optional[CsvSinkSettings], services: HostServices) -> CsvSink:
    """The sink factory named by the SinkSpec: ``create(settings, services)``."""
    return CsvSink(output_path(settings, services.home))
