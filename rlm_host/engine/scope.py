"""Identity of one run inside a run tree, and the way it emits events."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from rlm_host.events import EventBus, EventType, RunEvent, operation_of


@dataclass(frozen=True)
class RunScope:
    run_id: str
    root_run_id: str
    depth: int
    bus: EventBus
    parent_run_id: Optional[str] = None

    def emit(self, type_: EventType, data: dict[str, Any], content: Optional[dict[str, Any]] = None) -> RunEvent:
        """Emit one event of this run; ``content`` goes to the bus's in-process subscribers, never to the file."""
        return self.bus.emit(RunEvent(  # the operation given: the validator then sets nothing
            type=type_, operation=operation_of(type_, data), run_id=self.run_id, root_run_id=self.root_run_id,
            parent_run_id=self.parent_run_id, depth=self.depth, data=data, content=content))

    def child(self, run_id: str) -> "RunScope":
        return RunScope(run_id, self.root_run_id, self.depth + 1, self.bus, parent_run_id=self.run_id)


def new_run_id() -> str:
    """A sortable, unique, readable run id in UTC: ``run_20261122_181500_123456_ab12``."""
    return f"run_{datetime.now(timezone.utc):%Y%m%d_%H%M%S_%f}_{secrets.token_hex(2)}"
