"""A test-only sink that is on by default (``RLM_PLUGIN_MODULES=support.default_sinks``): ``SinkSpec(default=True)``
feeds it every run whose ``[run] sinks`` is not set. It writes the event types it handled to ``[sink.on-by-default]
record``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel

from rlm_host import RunEvent, SinkSpec, hookimpl


class RecordSettings(BaseModel):
    record: Optional[Path] = None


class RecordingSink:
    def __init__(self, settings: Optional[RecordSettings], services: Any) -> None:
        self.record = (settings or RecordSettings()).record

    def handle(self, event: RunEvent) -> None:
        if self.record is not None:
            with self.record.open("a") as handle:
                handle.write(event.type + "\n")

    def close(self) -> None:
        pass


@hookimpl
def rlm_register_sinks() -> list[SinkSpec]:
    here = "support.default_sinks"
    return [SinkSpec("on-by-default", "Fed by every run that names no sinks", f"{here}:RecordingSink",
                     settings=f"{here}:RecordSettings", default=True)]
