"""Test-only sinks (``RLM_PLUGIN_MODULES=support.misbehaving_sinks``) that misbehave the ways remote backends do:
``slow`` takes ``[sink.slow] delay`` seconds per event (a backend answering in 500 ms), ``raising`` raises on
the first step, ``hanging`` never returns from its first call, ``broken`` cannot even start. ``slow`` writes the
event types it handled to ``[sink.slow] record`` so a test sees what was delivered."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel

from rlm_host import RunEvent, SinkSpec, hookimpl

#: Set by a test to release the hanging sink's threads when it ends.
RELEASE = threading.Event()


class SlowSettings(BaseModel):
    delay: float = 0.5
    record: Optional[Path] = None


class SlowSink:
    def __init__(self, settings: Optional[SlowSettings], services: Any) -> None:
        self.settings = settings or SlowSettings()

    def handle(self, event: RunEvent) -> None:
        time.sleep(self.settings.delay)
        if self.settings.record is not None:
            with self.settings.record.open("a") as handle:
                handle.write(event.type + "\n")

    def close(self) -> None:
        time.sleep(self.settings.delay)


class RaisingSink:
    def __init__(self, settings: Any, services: Any) -> None:
        pass

    def handle(self, event: RunEvent) -> None:
        if event.type == "step":
            raise ConnectionError("backend refused the span batch (HTTP 503)")

    def close(self) -> None:
        pass


class HangingSink(RaisingSink):
    def handle(self, event: RunEvent) -> None:
        RELEASE.wait(120)


def _broken(settings: Any, services: Any) -> Any:
    raise RuntimeError("no credentials: set BACKEND_API_KEY")


@hookimpl
def rlm_register_sinks() -> list[SinkSpec]:
    here = "support.misbehaving_sinks"
    return [
        SinkSpec("slow", "Answers every event after a delay", f"{here}:SlowSink", settings=f"{here}:SlowSettings"),
        SinkSpec("raising", "Raises on the first step", f"{here}:RaisingSink"),
        SinkSpec("hanging", "Never returns from its first call", f"{here}:HangingSink"),
        SinkSpec("broken", "Cannot start", f"{here}:_broken"),
    ]
