"""A record a resume acts on (a benchmark's manifest, a sweep's record) that this user's rlm did not sign
(``rlm_bench.signed_records``: planted by a cloned project, or changed since) is screened as an untrusted project
file is: each setting it would give a run is judged by the host's ``risk_of`` under the key a project file sets it
with (``sandbox`` as ``run.sandbox``, a pack file as a folder), a Ray cluster as a sweep file's is
(``rlm_bench.sweep.file.cluster_risks``). What is risky is ignored (the configured value applies instead), with one
warning per record naming each setting and why. ``--trust-config`` takes the project's records as they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from rlm_host.sdk.embedding import risk_of

if TYPE_CHECKING:
    from rlm_bench.store import Manifest, Stored
    from rlm_bench.sweep.record import SweepRecord

#: The project-file key each manifest field a resume uses is judged as.
MANIFEST_KEYS = {"model": "run.model", "sub_model": "run.sub_model", "judge_model": "run.model",
                 "sandbox": "run.sandbox", "instructions": "run.instructions", "pack_file": "run.workdir"}

Refused = tuple[str, Any, str]  # (the record's name for the setting, its value, why it is ignored)


def refused(asks: Iterable[tuple[str, str, Any]], project: Path, host: Any) -> list[Refused]:
    """Of ``(name, key, value)`` asks, those the host's screening of project files refuses (``risk_of``)."""
    return [(name, value, why) for name, key, value in asks
            if value is not None and (why := risk_of(key, value, project, host))]


def warn(path: Path, ignored: list[Refused]) -> None:
    """The one warning a record gets, in the form an untrusted project file's has."""
    from rlm_host.sdk.commands import say

    items = "; ".join(f"{name} = {repr(value)[:120]} ({why})" for name, value, why in ignored)
    say(f"warning: {path} was not written by your rlm (it carries no valid signature of yours), so these "
             f"settings were ignored: {items}. If you trust this project, pass --trust-config.",
             event="untrusted record", level="warning", file=str(path),
             ignored=[name for name, _, _ in ignored])


def manifest_for_resume(stored: "Stored[Manifest]", project: Path, host: Any, trust: bool = False) -> "Manifest":
    """The manifest a resume runs: as written when this user's rlm signed it (or ``trust``), else screened."""
    if stored.signed or trust:
        return stored.record
    asks = [(name, key, getattr(stored.record, name)) for name, key in MANIFEST_KEYS.items()]
    ignored = refused(asks, project, host)
    if ignored:
        warn(stored.path, ignored)
    return stored.record.model_copy(update={name: None for name, _, _ in ignored})


def sweep_for_resume(stored: "Stored[SweepRecord]", project: Path, host: Any, trust: bool = False) -> "SweepRecord":
    """The sweep record a resume runs: as written when this user's rlm signed it (or ``trust``), else without the
    ``[run]`` settings (of the sweep, its overrides and every point), pack files and Ray cluster it may not give."""
    from rlm_bench.sweep.file import cluster_risks  # here: the sweep package imports this module

    if stored.signed or trust:
        return stored.record
    record = stored.record.model_copy(deep=True)
    spec = record.spec
    ignored: dict[str, Refused] = {}
    runs = [spec.get("run"), *(o.get("run") for o in spec.get("override") or [] if isinstance(o, dict)),
            *(point.point.get("run") for point in record.points)]
    for run in (run for run in runs if isinstance(run, dict)):
        for name, value, why in refused([(f"run.{k}", f"run.{k}", v) for k, v in run.items()], project, host):
            run.pop(name.removeprefix("run."))
            ignored.setdefault(name, (name, value, why))
    grid = got if isinstance(got := spec.get("sweep"), dict) else {}
    folder = Path(record.file).parent  # a resume reads the packs beside the sweep file the record names
    for pack in list(grid.get("packs") or []):
        for name, value, why in refused([("sweep.packs", "run.workdir", str((folder / str(pack)).resolve()))],
                                        project, host):
            grid["packs"].remove(pack)
            ignored[f"{name} {value}"] = (name, value, why)
    ray = (spec.get("bench") or {}).get("ray") or {}
    for key, value, why in cluster_risks(ray):
        ray.pop(key)
        ignored[f"bench.ray.{key}"] = (f"bench.ray.{key}", value, why)
    if ignored:
        warn(stored.path, list(ignored.values()))
    return record
