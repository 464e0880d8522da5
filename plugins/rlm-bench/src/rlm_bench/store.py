"""Where benchmarks live: ``<home>/benchmarks``.

::

    <home>/benchmarks/<benchmark_id>.json              the summary (BenchmarkSummary), written at the end
    <home>/benchmarks/<benchmark_id>/manifest.json      what was asked: preset, mode, models, case ids
    <home>/benchmarks/<benchmark_id>/cases/<case>.json  one CaseResult per finished case, written as it finishes

Case files are written to a temporary name and renamed, so a kill never leaves half a result: a resumed
benchmark runs exactly the cases without a file. Summaries and case files of older schemas load with today's
names (``rlm_bench.compat``). Summaries are found by id, unique id prefix, ``latest``,
``previous`` (the one before the latest) or path.

A benchmark id is a name, never a path (``rlm_bench.ids``): every path of the store is built from a checked id,
and a benchmark's folder must resolve inside the store (not through a planted link). A manifest carries this
user's signature (``rlm_bench.signed_records``); ``read_manifest`` says whether it is there and valid, for a resume
to screen what it takes from one that is not (``rlm_bench.record_screen``).
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shutil
from datetime import datetime, timezone
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Optional, TypeVar

from pydantic import Field, ValidationError

from rlm_bench.compat import upgrade_summary, upgrade_tokens
from rlm_bench.ids import checked_id, is_store_id
from rlm_bench.signed_records import MAX_RECORD_BYTES, load_signed, signed_json
from rlm_host.sdk.context import read_regular, write_atomic
from rlm_bench.summary import BenchmarkIdentity, BenchmarkSummary, CaseResult, utc_now
from rlm_host import InputError, RlmError

BENCH_DIR = "benchmarks"
#: The kind a manifest's signature names (``rlm_bench.signed_records``).
MANIFEST_KIND = "manifest"


class BenchmarkNotFoundError(RlmError):
    exit_code = 2


class Manifest(BenchmarkIdentity):
    """What a benchmark was asked to run; a resumed benchmark runs the same thing."""

    schema_version: int = 1
    model: Optional[str] = None
    case_ids: list[str]
    started_at: datetime = Field(default_factory=utc_now)


def new_benchmark_id(now: Optional[datetime] = None) -> str:
    """``bench_YYYYMMDD_HHMMSS_ffffff_xxxx`` in UTC: sortable by time, unique."""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return f"bench_{now:%Y%m%d_%H%M%S_%f}_{secrets.token_hex(2)}"


def case_name(case_id: str) -> str:
    """A file or folder name for a case id: the id itself when it is safe, else a cleaned id plus a short hash."""
    clean = re.sub(r"[^A-Za-z0-9._-]", "_", case_id)[:80]
    if clean == case_id and not case_id.startswith("."):
        return case_id
    return f"{clean.lstrip('.')}-{hashlib.sha1(case_id.encode()).hexdigest()[:8]}"


def case_file_name(case_id: str) -> str:
    return f"{case_name(case_id)}.json"


Record = TypeVar("Record")


@dataclass
class Stored(Generic[Record]):
    """A record read back from a store: where it was, and whether this user's rlm signed it as it is."""

    record: Record
    path: Path
    signed: bool


def _write_atomic(path: Path, text: str) -> None:
    """``write_atomic`` into a folder made on first use: a planted link at the name is replaced, never followed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)


class BenchStore:
    """Reads and writes the files of ``<home>/benchmarks``."""

    def __init__(self, home: Path) -> None:
        self.root = Path(home).expanduser() / BENCH_DIR

    def folder(self, benchmark_id: str) -> Path:
        """``<store>/<benchmark_id>`` for a well-formed id whose folder resolves inside the store; else an error."""
        folder = self.root / checked_id(benchmark_id, "bench")
        if not folder.resolve().is_relative_to(self.root.resolve()):
            raise BenchmarkNotFoundError(f"benchmark {benchmark_id} leads outside {self.root} (a symbolic link)",
                                         hint="a benchmark's folder must be a folder of the store")
        return folder

    def summary_path(self, benchmark_id: str) -> Path:
        return self.root / f"{checked_id(benchmark_id, 'bench')}.json"

    def manifest_path(self, benchmark_id: str) -> Path:
        return self.folder(benchmark_id) / "manifest.json"

    def case_path(self, benchmark_id: str, case_id: str) -> Path:
        return self.folder(benchmark_id) / "cases" / case_file_name(case_id)

    def project_path(self, benchmark_id: str, case_id: str) -> Path:
        """The folder a coding case's run works in (``rlm_bench.projects``)."""
        return self.folder(benchmark_id) / "projects" / case_name(case_id)

    def write_manifest(self, manifest: Manifest) -> None:
        """The manifest, signed by this user's rlm (a resume takes its settings as they are)."""
        text = signed_json(MANIFEST_KIND, manifest.model_dump(mode="json"))
        _write_atomic(self.manifest_path(manifest.benchmark_id), text)

    def load_manifest(self, benchmark_id: str) -> Manifest:
        return self.read_manifest(benchmark_id).record

    def read_manifest(self, benchmark_id: str) -> Stored[Manifest]:
        """A benchmark's manifest and whether this user's rlm signed it; its own id must be the one asked for."""
        if not is_store_id(benchmark_id, "bench"):
            raise BenchmarkNotFoundError(f"no benchmark {str(benchmark_id)[:80]!r} to resume",
                                         hint="benchmark ids look like bench_20260101_120000_000000_ab12 "
                                              "(a name, never a path)")
        path = self.manifest_path(benchmark_id)
        if not path.is_file():
            known = sorted(p.parent.name for p in self.root.glob("*/manifest.json")) if self.root.is_dir() else []
            hint = f"known benchmarks: {', '.join(known[-5:])}" if known else f"nothing under {self.root}"
            raise BenchmarkNotFoundError(f"no benchmark {benchmark_id!r} to resume", hint=hint)
        manifest, signed = load_signed(MANIFEST_KIND, path, Manifest, "a benchmark manifest", RlmError)
        if manifest.benchmark_id != benchmark_id:
            raise InputError(f"{path} names another benchmark: {manifest.benchmark_id[:80]!r}",
                             hint="a manifest's benchmark_id is the name of its folder")
        return Stored(manifest, path, signed)

    def save_case(self, benchmark_id: str, result: CaseResult) -> Path:
        path = self.case_path(benchmark_id, result.case_id)
        _write_atomic(path, result.model_dump_json(indent=2))
        return path

    def remove(self, benchmark_id: str) -> None:
        """Delete a benchmark's manifest, case results and summary."""
        shutil.rmtree(self.folder(benchmark_id), ignore_errors=True)
        self.summary_path(benchmark_id).unlink(missing_ok=True)

    def load_cases(self, benchmark_id: str) -> dict[str, CaseResult]:
        """Finished case results by case id (an unreadable file counts as not finished)."""
        results: dict[str, CaseResult] = {}
        directory = self.folder(benchmark_id) / "cases"
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            try:
                raw = read_regular(path, MAX_RECORD_BYTES, follow_links=False)  # a FIFO here never hangs a resume
                result = CaseResult.model_validate(upgrade_tokens(json.loads(raw)))
            except (OSError, ValidationError, ValueError):
                continue
            results[result.case_id] = result
        return results

    def write_summary(self, summary: BenchmarkSummary) -> Path:
        path = self.summary_path(summary.benchmark_id)
        _write_atomic(path, summary.model_dump_json(indent=2))
        return path

    def summaries(self) -> list[Path]:
        """Summary files, oldest first (ids sort by time)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob("*.json") if p.is_file())

    def resolve(self, ref: str) -> Path:
        """A summary path from an id, a unique id prefix, ``latest``, ``previous`` or a path."""
        candidate = Path(ref).expanduser()
        if candidate.suffix == ".json" and candidate.is_file():
            return candidate
        found = self.summaries()
        if ref in ("latest", "previous"):
            need = 1 if ref == "latest" else 2
            if len(found) < need:
                raise BenchmarkNotFoundError(
                    f"no {ref} benchmark: {len(found)} saved under {self.root}",
                    hint="run one with `rlm bench run --preset NAME`",
                )
            return found[-need]
        matches = [p for p in found if p.stem == ref] or [p for p in found if p.stem.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            hint = "give an id, a unique prefix of one, latest, previous or a .json path"
            raise BenchmarkNotFoundError(f"no benchmark matches {ref!r}", hint=hint)
        raise BenchmarkNotFoundError(f"{ref!r} matches {len(matches)} benchmarks", hint="give more of the id")

    def load(self, ref: str) -> BenchmarkSummary:
        return load_summary(self.resolve(ref))


def load_summary(path: Path) -> BenchmarkSummary:
    try:
        data: Any = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RlmError(f"cannot read benchmark summary {path}: {exc}") from None
    try:
        return BenchmarkSummary.model_validate(upgrade_summary(data))
    except ValidationError as exc:
        where = ".".join(map(str, exc.errors()[0]["loc"]))
        raise RlmError(f"{path} is not a benchmark summary ({where}: {exc.errors()[0]['msg']})") from None
