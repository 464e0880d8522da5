"""Running a sweep: every case of every point handed to an executor, results kept by the driver alone.

The driver plans the sweep (one benchmark, with its manifest, per point of the grid), then feeds the cases to an
executor (``LocalExecutor`` here: threads or worker processes; ``rlm_bench.sweep_ray.RayExecutor``: Ray tasks on a
cluster) at most ``capacity`` at a time. Each finished case is saved at once in the bench store
(``<home>/benchmarks``), so a sweep is resumable: ``--resume SWEEP_ID`` runs only the cases without a result. A
point whose cases are all saved gets its summary, as ``rlm bench run`` writes one. The sweep's own record,
``<home>/sweeps/<sweep_id>.json``, holds the file, the points and their benchmark ids, and how the sweep went
(status, why it stopped, cases per node). It is signed by this user's rlm (``rlm_bench.signed_records``) and holds
no secret in clear (``rlm_bench.sweep_secrets``); a resume of a record that is not signed, or of a benchmark whose
manifest is not, takes only what an untrusted project file could give (``rlm_bench.record_screen``), and every id
a record holds is a name, never a path (``rlm_bench.ids``).

Budgets: with ``max_cost`` / ``max_tokens`` no new case starts once the finished cases' spend reaches it (the
running ones finish). Ctrl-C cancels the cases in flight and keeps every finished one. A case an executor lost
(its node died and the retries were spent) is reported with the resume command.

``rlm bench run`` is a one-point sweep through the same driver and ``LocalExecutor`` (``Plan.one_point``,
``strict``): it keeps no sweep record, and its first case that cannot run stops it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol

from pydantic import BaseModel, Field, ValidationError

from rlm_bench.catalog import find_preset
from rlm_bench.ids import checked_id
from rlm_bench.record_screen import manifest_for_resume, sweep_for_resume
from rlm_bench.shards import RunItem, Shards, worker_processes
from rlm_bench.signed_records import load_signed, signed_json
from rlm_bench.store import BenchStore, Manifest, Stored, _write_atomic, new_benchmark_id
from rlm_bench.summary import CaseResult, build_summary, utc_now
from rlm_bench.sweep_file import Point, SweepFile, check_trusted, expand
from rlm_bench.sweep_secrets import masked, with_secrets
from rlm_bench.sweep_worker import run_item
from rlm_host import InputError, RlmError

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


class SweepInterrupted(RlmError):
    """The sweep stopped before every case finished; finished cases are saved."""

    exit_code = 130


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
                             hint=f"sweeps in {self.root}: {known}")  # fmt: skip
        path = chosen[0]
        record, signed = load_signed(SWEEP_KIND, path, SweepRecord, "a sweep record", InputError)
        if checked_id(record.sweep_id, "sweep") != path.stem:
            raise InputError(f"{path} names another sweep: {record.sweep_id!r}",
                             hint="a sweep record's sweep_id is the name of its file")  # fmt: skip
        for point in record.points:
            checked_id(point.benchmark_id, "bench")
        return Stored(record, path, signed)


def stored_form(record: SweepRecord) -> dict[str, Any]:
    """A sweep record as it is written and printed (``--json``): a URL's password and every known key masked."""
    return masked(record.model_dump(mode="json"))


# ---------------------------------------------------------------------------------------------------- planning


@dataclass
class Plan:
    """A sweep ready to run: its record and, per point, the work items of its cases."""

    record: SweepRecord
    items: dict[str, list[dict[str, Any]]]  # benchmark_id → one item per case
    manifests: dict[str, Manifest]

    @property
    def cases(self) -> int:
        return sum(len(items) for items in self.items.values())

    @classmethod
    def one_point(cls, manifest: Manifest, items: list[dict[str, Any]]) -> "Plan":
        """One benchmark (``rlm bench run``: its record is never written), with the items of its cases left."""
        point = PointRecord(key=manifest.preset, benchmark_id=manifest.benchmark_id, point={},
                            cases=len(manifest.case_ids))  # fmt: skip
        record = SweepRecord(sweep_id=manifest.benchmark_id, spec={}, points=[point])
        return cls(record, {manifest.benchmark_id: items}, {manifest.benchmark_id: manifest})


def plan_sweep(spec: SweepFile, file: Path, runner: Any, *, executor: str = "local",
               config_file: Optional[Path] = None, trust: bool = False) -> Plan:  # fmt: skip
    """Expand the grid and check every name on the driver (a preset, model provider, framework, environment or
    sandbox that does not exist is bad input before anything runs); one manifest per point."""
    import rlm_host

    host, loaded = runner.host, runner.loaded
    check_trusted(spec, file, host, trust=trust)
    packs = [str((file.parent / pack).resolve()) for pack in spec.sweep.packs]
    _check_names(spec, host)
    points = expand(spec)
    sweep_id = "sweep_" + new_benchmark_id().removeprefix("bench_")
    presets: dict[str, Any] = {}
    records, items, manifests = [], {}, {}
    for point in points:
        if point.preset not in presets:
            presets[point.preset] = find_preset(point.preset, host, packs, loaded=loaded)
        preset = presets[point.preset]
        cases = preset.cases[: spec.sweep.limit] if spec.sweep.limit else list(preset.cases)
        manifest = Manifest(
            benchmark_id=new_benchmark_id(), preset=preset.name, source=preset.source, description=preset.description,
            pack_file=preset.pack_file, mode=spec.sweep.mode, framework=point.framework,
            environment=point.environment, model=point.model, sub_model=spec.sweep.sub_model, sandbox=point.sandbox,
            judge_model=spec.sweep.judge_model, case_ids=[c.case_id for c in cases],
            host_version=rlm_host.__version__, instructions=_instructions(point, file),
        )  # fmt: skip
        run = {**point.run, "labels": {**loaded.settings.run.labels, **point.run.get("labels", {}),
                                       "sweep_id": sweep_id, "sweep_point": point.key, "repeat": str(point.repeat)}}
        if manifest.instructions is not None:
            run["instructions"] = manifest.instructions
        loaded.with_run(run)  # a bad [run] value fails now, named, not in every worker
        manifests[manifest.benchmark_id] = manifest
        records.append(PointRecord(key=point.key, benchmark_id=manifest.benchmark_id, point=point.to_json(),
                                   cases=len(cases)))  # fmt: skip
        items[manifest.benchmark_id] = _items(sweep_id, manifest, [c.case_id for c in cases], packs, run,
                                              config_file, Path(runner.home), executor, trust)  # fmt: skip
    record = SweepRecord(sweep_id=sweep_id, name=spec.sweep.name, file=str(file), executor=executor,
                         spec=spec.model_dump(mode="json"), points=records)  # fmt: skip
    return Plan(record, items, manifests)


def _items(sweep_id: str, manifest: Manifest, case_ids: list[str], packs: list[str], run: dict[str, Any],
           config_file: Optional[Path], home: Path, executor: str, trust: bool) -> list[dict[str, Any]]:  # fmt: skip
    """The work items of a point's cases (what ``run_item`` needs, anywhere)."""
    shared = manifest.model_dump(mode="json")  # one dict for the point's cases (an executor sends it once)
    return [{"sweep_id": sweep_id, "benchmark_id": manifest.benchmark_id, "case_id": case_id, "manifest": shared,
             "packs": packs, "run": run, "config_file": str(config_file.resolve()) if config_file else None,
             "cwd": os.getcwd(), "home": str(home.resolve()), "ship_trajectory": executor != "local",
             "trust": trust} for case_id in case_ids]  # fmt: skip


def _instructions(point: Point, file: Path) -> Optional[str]:
    """The point's guidance: text, or ``@PATH`` read relative to the sweep file."""
    text = point.instructions
    if not text or not text.startswith("@"):
        return text or None
    from rlm_host.sdk.context import read_regular

    path = (file.parent / text[1:]).expanduser()
    try:  # a regular file, bounded: a FIFO named here must not hang the sweep
        return read_regular(path, 1024 * 1024, follow_links=True).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc.strerror or exc
        raise InputError(f"instructions {text}: cannot read {path}: {why}") from None


def _check_names(spec: SweepFile, host: Any) -> None:
    from rlm_host.sdk.models import split_model_string

    grid = spec.sweep
    for model in [*grid.models, *(m for m in (grid.sub_model, grid.judge_model) if m)]:
        if model != "auto":  # "auto": the configured default, as `rlm bench run --model auto`
            provider, _ = split_model_string(model, host)
            host.providers().get(provider)  # a provider that is not installed is bad input here, not in every case
    for framework in grid.frameworks:
        if framework != "native":
            host.frameworks().get(framework, where_more=" (frameworks are plugins: pip install rlm-adapter-<name>)")
    for environment in grid.environments:
        host.environments().get(environment)
    for sandbox in grid.sandboxes:
        host.sandboxes().get(sandbox)


def resume_plan(store: SweepStore, ref: str, *, executor: str = "local", config_file: Optional[Path] = None,
                trust: bool = False, host: Any = None) -> Plan:  # fmt: skip
    """The cases of a recorded sweep that have no saved result yet (their items rebuilt from the record). A record
    or manifest this user's rlm did not sign is screened (``trust``: ``--trust-config`` takes them as they are);
    the secrets a record masks are read again from its sweep file."""
    stored = store.read(ref)
    project = Path.cwd()
    record = sweep_for_resume(stored, project, host, trust)
    if stored.signed or trust:
        record = with_secrets(record)
    items: dict[str, list[dict[str, Any]]] = {}
    manifests = {}
    try:
        spec = SweepFile.model_validate(record.spec)
    except ValidationError as exc:
        raise InputError(f"{stored.path}: not a sweep record: {exc.errors()[0]['msg']}") from None
    packs = [str((Path(record.file).parent / pack).resolve()) for pack in spec.sweep.packs]
    for point in record.points:
        manifest = manifest_for_resume(store.bench.read_manifest(point.benchmark_id), project, host, trust)
        manifests[point.benchmark_id] = manifest
        done = store.bench.load_cases(point.benchmark_id)
        run = json.loads(json.dumps(Point.from_json(point.point).run))
        run = {**run, "labels": {**run.get("labels", {}), "sweep_id": record.sweep_id, "sweep_point": point.key,
                                 "repeat": str(point.point.get("repeat", 1))}}  # fmt: skip
        if manifest.instructions is not None:
            run["instructions"] = manifest.instructions
        items[point.benchmark_id] = _items(record.sweep_id, manifest, [c for c in manifest.case_ids if c not in done],
                                           packs, run, config_file, store.root.parent, executor, trust)  # fmt: skip
    record.executor, record.status, record.stopped = executor, "running", None
    return Plan(record, items, manifests)


# ---------------------------------------------------------------------------------------------------- executors


class Executor(Protocol):
    """Where cases run. ``submit`` starts one (``run_item(item)`` somewhere), ``wait`` returns the finished ones
    as ``(handle, outcome)`` — ``run_item``'s dict, or a ``CaseLost`` — within ``timeout`` seconds."""

    name: str
    capacity: int

    def submit(self, item: dict[str, Any]) -> Any: ...

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Any]]: ...

    def cancel(self, handles: Iterable[Any]) -> None: ...

    def close(self) -> None: ...


@dataclass
class CaseLost:
    """A case no node could finish (its node died and the retries were spent, or the executor failed); ``error``:
    what its run raised, when it raised (a bad model name: nothing can run)."""

    reason: str
    error: Optional[BaseException] = None


class LocalExecutor:
    """This machine: ``concurrency`` cases at once, on threads of this process or shared by forked worker
    processes that each run theirs on threads (``rlm_bench.shards``; ``processes``: how many, None for one per
    core for every 8 cases at once, 1 for threads only). ``run(item, cancel)`` runs a case (default: ``run_item``);
    a run that raises KeyboardInterrupt was cancelled, one that raises anything else is a ``CaseLost`` carrying
    it. ``close`` cancels what still runs and waits for it."""

    name = "local"

    def __init__(self, concurrency: int = 4, processes: Optional[int] = 1, run: Optional[RunItem] = None) -> None:
        self.capacity = max(1, concurrency)
        self._run = run or run_item
        self._cancel = threading.Event()
        count = worker_processes(self.capacity, processes)
        self._shards = Shards(self._run, count, self.capacity) if count > 1 else None  # forked first: no thread yet
        self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="bench")

    def submit(self, item: dict[str, Any]) -> Any:
        if self._shards is not None:
            return self._shards.submit(item)
        return self._pool.submit(self._run, item, self._cancel)

    def wait(self, handles: Iterable[Any], timeout: float) -> list[tuple[Any, Any]]:
        if self._shards is not None:
            return self._shards.wait(handles, timeout)
        done, _ = wait(list(handles), timeout=timeout, return_when=FIRST_COMPLETED)
        return [(future, _outcome(future)) for future in done]

    def cancel(self, handles: Iterable[Any]) -> None:
        self._cancel.set()  # threads: the running cases stop at their next check
        if self._shards is not None:
            self._shards.cancel()

    def close(self) -> None:
        self._cancel.set()
        if self._shards is not None:
            self._shards.close()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _outcome(future: Future) -> Any:
    try:
        return future.result()
    except (KeyboardInterrupt, CancelledError):
        return {"cancelled": True}
    except Exception as exc:  # noqa: BLE001 - the case could not run: the driver decides what that stops
        return CaseLost(f"{type(exc).__name__}: {exc}", exc)


# ---------------------------------------------------------------------------------------------------- the driver


@dataclass
class Progress:
    """What a progress display is told: totals, and each case as it starts and ends."""

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    spent: float = 0.0
    tokens: int = 0
    per_node: dict[str, int] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)


#: Told ("start" | "submitted" | "case" | "lost" | "summary" | "end", progress, the case's result or the point's
#: summary).
Listener = Callable[[str, Progress, Any], None]


class SweepDriver:
    """Feeds a plan's cases to an executor and keeps what comes back (see the module docstring). ``strict`` runs
    one benchmark (``rlm bench run``): no sweep record is kept, and the first case that cannot run (``CaseLost``)
    stops the others as Ctrl-C does and is the ``failure``."""

    def __init__(self, store: SweepStore, executor: Executor, *, max_cost: Optional[float] = None,
                 max_tokens: Optional[int] = None, listener: Optional[Listener] = None,
                 strict: bool = False) -> None:  # fmt: skip
        self.store, self.executor = store, executor
        self.max_cost, self.max_tokens = max_cost, max_tokens
        self.listener = listener or (lambda *_: None)
        self.strict = strict
        self.progress = Progress()
        self.failure: Optional[CaseLost] = None
        self._stopping = self._interrupted = False

    def run(self, plan: Plan) -> SweepRecord:
        record, bench = plan.record, self.store.bench
        for manifest in plan.manifests.values():
            if not bench.manifest_path(manifest.benchmark_id).is_file():
                bench.write_manifest(manifest)
        self._save(record)
        progress = self.progress = Progress(total=sum(p.cases for p in record.points))
        progress.done = progress.total - plan.cases
        pending = deque(item for items in plan.items.values() for item in items)
        self._planned = {benchmark_id: len(items) for benchmark_id, items in plan.items.items()}
        self._remaining = dict(self._planned)
        for benchmark_id, left in self._remaining.items():  # finished before a crash, not yet summarised
            if left == 0 and not bench.summary_path(benchmark_id).is_file():
                self._summarise_if_complete(benchmark_id, plan)
        running: dict[Any, dict[str, Any]] = {}
        lost: list[str] = []
        self.listener("start", progress, None)
        try:
            try:
                while (pending or running) and not self._stopping:
                    while pending and len(running) < self.executor.capacity and not self._over_budget(record):
                        item = pending.popleft()
                        running[self.executor.submit(item)] = item
                        progress.running = len(running)
                        self.listener("submitted", progress, None)
                    if not running:
                        break
                    for handle, outcome in self.executor.wait(list(running), timeout=0.5):
                        item = running.pop(handle)
                        progress.running = len(running)
                        self._finish(item, outcome, record, progress, plan, lost)
            except KeyboardInterrupt:
                self._stopping = self._interrupted = True
            if self._stopping:  # Ctrl-C, a case cancelled underneath, or (strict) one that could not run
                self.executor.cancel(list(running))
                deadline = time.monotonic() + 30
                while running and time.monotonic() < deadline:  # keep every case that still finishes
                    for handle, outcome in self.executor.wait(list(running), timeout=0.5):
                        self._finish(running.pop(handle), outcome, record, progress, plan, lost)
            if self._interrupted:
                record.status = "interrupted"
                self._save(record)
                raise SweepInterrupted(f"sweep {record.sweep_id} interrupted: {progress.done} of {progress.total} "
                                       "cases finished and saved",
                                       hint=f"resume it with: rlm bench sweep --resume {record.sweep_id}") from None
            record.status = "lost" if lost else "budget" if record.stopped else "finished"
            if lost:
                record.stopped = f"{len(lost)} case(s) lost: {lost[0]}"
        finally:
            self.executor.close()
        self._save(record)
        self.listener("end", progress, None)
        return record

    def _save(self, record: SweepRecord) -> None:
        if not self.strict:
            self.store.save(record)

    def _over_budget(self, record: SweepRecord) -> bool:
        if record.stopped is not None:
            return True
        if self.max_cost is not None and record.spent_cost >= self.max_cost:
            record.stopped = f"--max-cost ${self.max_cost:g} reached (${record.spent_cost:.4f} spent)"
        elif self.max_tokens is not None and record.spent_tokens >= self.max_tokens:
            record.stopped = f"--max-tokens {self.max_tokens} reached ({record.spent_tokens} spent)"
        return record.stopped is not None

    def _finish(self, item: dict[str, Any], outcome: Any, record: SweepRecord, progress: Progress, plan: Plan,
                lost: list[str]) -> None:  # fmt: skip
        self._remaining[item["benchmark_id"]] -= 1
        if isinstance(outcome, CaseLost):
            lost.append(f"{item['benchmark_id']}/{item['case_id']}: {outcome.reason}")
            progress.failed += 1
            self.listener("lost", progress, None)
            if self.strict and not self._stopping:
                self.failure, self._stopping = outcome, True
            return
        if outcome.get("cancelled"):
            if not self._stopping:  # cancelled underneath (Ctrl-C reached the case first): stop as Ctrl-C does
                self._stopping = self._interrupted = True
            return
        result = CaseResult.model_validate(outcome["result"])
        node = str(outcome.get("node") or "?")
        if outcome.get("trajectory") is not None and result.trajectory_path:
            result.trajectory_path = self._keep_trajectory(result, outcome["trajectory"])
        self.store.bench.save_case(item["benchmark_id"], result)
        stats = record.nodes.setdefault(node, NodeStats())
        stats.cases += 1
        stats.failed += result.status == "error"
        stats.seconds = round(stats.seconds + result.duration_s, 4)
        record.spent_cost = round(record.spent_cost + (result.cost or 0.0), 6)
        record.spent_tokens += result.tokens.total
        progress.done += 1
        progress.failed += result.status == "error"
        progress.spent, progress.tokens = record.spent_cost, record.spent_tokens
        progress.per_node[node] = progress.per_node.get(node, 0) + 1
        self._summarise_if_complete(item["benchmark_id"], plan)
        if progress.done % 20 == 0:
            self._save(record)
        self.listener("case", progress, result)

    def _keep_trajectory(self, result: CaseResult, text: str) -> str:
        """A trajectory shipped from another node, written under this home's runs (never over an existing one)."""
        name = Path(result.trajectory_path or "run.jsonl").name
        target = self.store.root.parent / "runs" / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(target, text)
        return str(target)

    def _summarise_if_complete(self, benchmark_id: str, plan: Plan) -> None:
        """A point whose last case just finished gets its summary (read from the saved cases once)."""
        if self._remaining[benchmark_id] > 0:
            return
        manifest = plan.manifests[benchmark_id]
        results = self.store.bench.load_cases(benchmark_id)
        if all(c in results for c in manifest.case_ids):
            summary = build_summary(manifest, [results[c] for c in manifest.case_ids],
                                    resumed=len(manifest.case_ids) - self._planned[benchmark_id])  # fmt: skip
            self.store.bench.write_summary(summary)
            self.listener("summary", self.progress, summary)
