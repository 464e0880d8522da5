"""Planning a sweep: the grid expanded into points, one benchmark (with its manifest) per point, and one
``SweepItem`` per case; or, for ``--resume``, the cases of a recorded sweep without a saved result. A record or
manifest this user's rlm did not sign is screened first (``rlm_bench.record_screen``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pydantic import ValidationError

from rlm_bench.catalog import find_preset
from rlm_bench.record_screen import manifest_for_resume, sweep_for_resume
from rlm_bench.store import Manifest, new_benchmark_id
from rlm_bench.sweep.file import Point, SweepFile, check_trusted, expand
from rlm_bench.sweep.record import PointRecord, SweepRecord, SweepStore
from rlm_bench.sweep.secrets import with_secrets
from rlm_bench.sweep.worker import SweepItem
from rlm_host import InputError


@dataclass
class Plan:
    """A sweep ready to run: its record and, per point, the work items of its cases."""

    record: SweepRecord
    items: dict[str, list[SweepItem]]  # benchmark_id → one item per case
    manifests: dict[str, Manifest]

    @property
    def cases(self) -> int:
        return sum(len(items) for items in self.items.values())

    @classmethod
    def one_point(cls, manifest: Manifest, items: list[SweepItem]) -> "Plan":
        """One benchmark (``rlm bench run``: its record is never written), with the items of its cases left."""
        point = PointRecord(key=manifest.preset, benchmark_id=manifest.benchmark_id, point={},
                            cases=len(manifest.case_ids))
        record = SweepRecord(sweep_id=manifest.benchmark_id, spec={}, points=[point])
        return cls(record, {manifest.benchmark_id: items}, {manifest.benchmark_id: manifest})


def plan_sweep(spec: SweepFile, file: Path, runner: Any, *, executor: str = "local",
               config_file: Optional[Path] = None, trust: bool = False) -> Plan:
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
    records: list[PointRecord] = []
    items: dict[str, list[SweepItem]] = {}
    manifests: dict[str, Manifest] = {}
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
        )
        run = {**point.run, "labels": {**loaded.settings.run.labels, **point.run.get("labels", {}),
                                       "sweep_id": sweep_id, "sweep_point": point.key, "repeat": str(point.repeat)}}
        if manifest.instructions is not None:
            run["instructions"] = manifest.instructions
        loaded.with_run(run)  # a bad [run] value fails now, named, not in every worker
        manifests[manifest.benchmark_id] = manifest
        records.append(PointRecord(key=point.key, benchmark_id=manifest.benchmark_id, point=point.to_json(),
                                   cases=len(cases)))
        items[manifest.benchmark_id] = _items(sweep_id, manifest, [c.case_id for c in cases], packs, run,
                                              config_file, Path(runner.home), executor, trust)
    record = SweepRecord(sweep_id=sweep_id, name=spec.sweep.name, file=str(file), executor=executor,
                         spec=spec.model_dump(mode="json"), points=records)
    return Plan(record, items, manifests)


def _items(sweep_id: str, manifest: Manifest, case_ids: list[str], packs: list[str], run: dict[str, Any],
           config_file: Optional[Path], home: Path, executor: str, trust: bool) -> list[SweepItem]:
    """The work items of a point's cases (what ``run_item`` needs, anywhere)."""
    shared = manifest.model_dump(mode="json")  # one dict for the point's cases (an executor sends it once)
    return [SweepItem(benchmark_id=manifest.benchmark_id, case_id=case_id, manifest=shared, run=run, sweep_id=sweep_id,
                      packs=tuple(packs), config_file=str(config_file.resolve()) if config_file else None,
                      cwd=os.getcwd(), home=str(home.resolve()), ship_trajectory=executor != "local", trust=trust)
            for case_id in case_ids]


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
                trust: bool = False, host: Any = None) -> Plan:
    """The cases of a recorded sweep that have no saved result yet (their items rebuilt from the record). A record
    or manifest this user's rlm did not sign is screened (``trust``: ``--trust-config`` takes them as they are);
    the secrets a record masks are read again from its sweep file."""
    stored = store.read(ref)
    project = Path.cwd()
    record = sweep_for_resume(stored, project, host, trust)
    if stored.signed or trust:
        record = with_secrets(record)
    items: dict[str, list[SweepItem]] = {}
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
                                 "repeat": str(point.point.get("repeat", 1))}}
        if manifest.instructions is not None:
            run["instructions"] = manifest.instructions
        items[point.benchmark_id] = _items(record.sweep_id, manifest, [c for c in manifest.case_ids if c not in done],
                                           packs, run, config_file, store.root.parent, executor, trust)
    record.executor, record.status, record.stopped = executor, "running", None
    return Plan(record, items, manifests)
