"""A sweep's record, ``<home>/sweeps/<sweep_id>.json``: the sweep file, the points and their benchmark ids, and how
the sweep went (status, why it stopped, cases per node). It is signed by this user's rlm (``rlm_bench.signed_records``)
and holds no secret in clear (``rlm_bench.sweep.secrets``); every id it holds is a name, never a path
(``rlm_bench.ids``)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, Field

from rlm_bench.ids import checked_id
from rlm_bench.signed_records import load_signed, signed_json
from rlm_bench.store import BenchStore, Stored, _write_atomic
from rlm_bench.summary import utc_now
from rlm_bench.sweep.secrets import masked
from rlm_host import InputError

SWEEPS_DIR = "sweeps"
#: The kind a sweep record's signature names (``rlm_bench.signed_records``).
SWEEP_KIND = "sweep"


class NodeStats(BaseModel):
    cases: int = 0
    failed: int = 0
    seconds: float = 0.0  # summed case durations


class PointRecord(BaseModel):
    key: str
    benchmark_id: str
    point: dict[str, Any]
    cases: int


class SweepRecord(BaseModel):
    """``<home>/sweeps/<sweep_id>.json``: what the sweep is and how it went."""

    schema_version: int = 1
    sweep_id: str
    name: str = ""
    file: str = ""
    spec: dict[str, Any]
    executor: str = "local"
    points: list[PointRecord]
    status: str = "running"  # running, finished, interrupted, budget, lost
    stopped: Optional[str] = None  # why no more cases started (a budget), or what was lost
    spent_cost: float = 0.0
    spent_tokens: int = 0
    nodes: dict[str, NodeStats] = Field(default_factory=dict)
    started_at: datetime = Field(default_factory=utc_now)
    updated_at: datetime = Field(default_factory=utc_now)


class SweepStore:
    """Sweep records beside the benchmarks of a run home."""

    def __init__(self, home: Path) -> None:
        self.root = Path(home) / SWEEPS_DIR
        self.bench = BenchStore(home)

    def path(self, sweep_id: str) -> Path:
        return self.root / f"{checked_id(sweep_id, 'sweep')}.json"

    def save(self, record: SweepRecord) -> None:
        """The record, masked (``stored_form``) and signed by this user's rlm."""
        record.updated_at = utc_now()
        self.root.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.path(record.sweep_id), signed_json(SWEEP_KIND, stored_form(record)))

    def load(self, ref: str) -> SweepRecord:
        """A sweep by id, unique id prefix or ``latest``."""
        return self.read(ref).record

    def read(self, ref: str) -> Stored[SweepRecord]:
        """A sweep by id, unique id prefix or ``latest``, and whether this user's rlm signed its record; the ids it
        holds are checked (its own must be its file's name)."""
        found = sorted(self.root.glob("*.json")) if self.root.is_dir() else []
        if ref == "latest" and found:
            chosen = [max(found, key=lambda p: p.stat().st_mtime)]
        else:
            chosen = [p for p in found if p.stem == ref] or [p for p in found if p.stem.startswith(ref)]
        if len(chosen) != 1:
            known = ", ".join(p.stem for p in found[-5:]) or "none yet"
            raise InputError(f"no sweep {ref!r}" if not chosen else f"sweep id {ref!r} is ambiguous",
                             hint=f"sweeps in {self.root}: {known}")
        path = chosen[0]
        record, signed = load_signed(SWEEP_KIND, path, SweepRecord, "a sweep record", InputError)
        if checked_id(record.sweep_id, "sweep") != path.stem:
            raise InputError(f"{path} names another sweep: {record.sweep_id!r}",
                             hint="a sweep record's sweep_id is the name of its file")
        for point in record.points:
            checked_id(point.benchmark_id, "bench")
        return Stored(record, path, signed)


def stored_form(record: SweepRecord) -> dict[str, Any]:
    """A sweep record as it is written and printed (``--json``): a URL's password and every known key masked."""
    return masked(record.model_dump(mode="json"))
