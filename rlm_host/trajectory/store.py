"""Trajectories on disk: one append-only JSON-lines file per run tree, and the store that finds and reads them.

A root run and every child run it spawns share one file, ``<home>/runs/<root_run_id>.jsonl``, holding each
``RunEvent`` as one JSON line in emission order (the format's version is the ``schema_version`` of each
``run_start`` event). ``TrajectoryWriter`` flushes after every event, so a run that is killed keeps every step it
finished; ``RunStore`` reads the files back, tolerating a last line cut short by such a kill, and reads files of
older schemas with today's names.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional

from pydantic import BaseModel, ValidationError

from rlm_host.config.schema import problems
from rlm_host.context import open_regular
from rlm_host.errors import InputError, RlmError
from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.events import RunEvent
from rlm_host.results import RunResult, StepRecord
from rlm_host.text import clip, valid_unicode
from rlm_host.threads import run_in_thread
from rlm_host.trajectory.compat import upgrade_event

RUNS_DIR = "runs"
SUFFIX = ".jsonl"
TASK_CHARS = 100
_TAIL_BLOCK = 64 * 1024
#: The largest trajectory rlm reads back (a 10,000-step run is a few tens of MB): a planted file cannot flood memory.
MAX_TRAJECTORY_BYTES = 512 * 1024 * 1024
_NO_RUNS_HINT = "runs are saved by `rlm run`; set RLM_HOME or [paths] home if they live elsewhere"


class TrajectoryError(RlmError):
    """A saved run could not be found or read."""


class RunNotFoundError(TrajectoryError):
    """No saved run matches the id, prefix or path given."""

    exit_code = 2


class AmbiguousRunError(TrajectoryError):
    """A prefix matches more than one saved run."""

    exit_code = 2


class CorruptTrajectoryError(TrajectoryError):
    """A trajectory file holds a line that is not an event (other than a truncated last line)."""

    exit_code = 2  # a damaged file the user pointed at is bad input


def _event_line(event: RunEvent) -> str:
    """One event as one JSON line of valid UTF-8; values JSON cannot hold are written as their ``repr``."""
    try:
        return event.model_dump_json(fallback=repr)
    except Exception:  # lone surrogates (sandbox output, a model's text), bytes that are not UTF-8
        return valid_unicode(json.dumps(event.model_dump(), default=repr, ensure_ascii=False))


#: Seconds a live event waits for the next event to share its write; then it is written alone (a model call or
#: code in progress shows in the file, for a live view in another process, within this delay).
HOLD_SECONDS = 0.05


class TrajectoryWriter:
    """Event subscriber appending every event of one run tree to ``<home>/runs/<root_run_id>.jsonl``.

    Events of other run trees (a bus shared by a benchmark) are ignored. Each line goes to the file in one
    unbuffered write as soon as it is made, so the file is readable, up to the last finished event, while the run
    goes on. A write that fails (a full disk, a removed folder) never stops the run: the file is cut back to its
    last whole line, one warning names the path and the reason, later events are dropped, and ``failed`` says
    why, so the caller can still deliver the answer and report the record as incomplete.

    A live event (``rlm_host.event_types``) waits for the next event and goes to the file in the same write, or
    alone after ``HOLD_SECONDS`` when none comes (a long model call), so the live events cost no write of their
    own; the file never shows an event out of order, and ``close`` writes one still waiting.
    """

    def __init__(self, home: Path, root_run_id: str) -> None:
        self.root_run_id = root_run_id
        self.path = Path(home).expanduser() / RUNS_DIR / f"{root_run_id}{SUFFIX}"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file: Optional[IO[bytes]] = self.path.open("ab", buffering=0)
        except OSError as exc:
            raise InputError(f"cannot write runs to {self.path.parent}: {exc.strerror or exc}",
                             hint="choose a writable run home: RLM_HOME=DIR, or [paths] home in "
                                  "rlm.toml") from None
        self._whole = self._file.seek(0, os.SEEK_END)  # the end of the last complete line
        self._lock, self._held = threading.Lock(), b""  # _held: live event lines waiting for the next event
        self.failed: Optional[str] = None
        self.dropped = 0  # events not written after a write failed

    def __call__(self, event: RunEvent) -> None:
        if event.root_run_id != self.root_run_id:
            return
        data = (_event_line(event) + "\n").encode("utf-8", errors="surrogatepass")
        with self._lock:
            if self._file is None:
                raise TrajectoryError(f"trajectory writer for {self.root_run_id} is closed")
            if self.failed is not None:
                self.dropped += 1
                return
            if event.type in LIVE_EVENT_TYPES:
                if not self._held:  # a helper thread writes it after HOLD_SECONDS unless an event comes first
                    run_in_thread(self.write_held, "rlm-trajectory-late")
                self._held += data
                return
            self._write(data)

    def write_held(self) -> None:
        """Write, ``HOLD_SECONDS`` from now, the live events then still waiting (on a helper thread)."""
        time.sleep(HOLD_SECONDS)
        with self._lock:
            if self._file is not None:
                self._write(b"")

    def _write(self, data: bytes) -> None:
        """Write the held lines, then ``data``, in one write (under the lock, the file open); nothing once a write
        failed. A write that fails cuts the file back to its last whole line and stops the writing."""
        data, self._held = self._held + data, b""
        if not data or self.failed is not None:
            return
        assert self._file is not None  # the callers checked it is open, under the lock
        try:
            written = self._file.write(data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"only {written} of {len(data)} bytes written")
            self._whole += written
        except OSError as exc:
            self.failed, self.dropped = exc.strerror or str(exc), self.dropped + 1
            with contextlib.suppress(OSError, ValueError):
                os.ftruncate(self._file.fileno(), self._whole)  # needs no free space
            from rlm_host import logs

            logs.get_logger("rlm.trajectory").warning(f"could not write the trajectory {self.path}: {self.failed}; "
                                                      "the run goes on, its record ends here")

    def close(self) -> None:
        """Close the file (idempotent, never raises)."""
        with self._lock:
            if self._file is not None:
                self._write(b"")
                with contextlib.suppress(OSError):
                    self._file.close()
                self._file = None

    def __enter__(self) -> "TrajectoryWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class RunSummary(BaseModel):
    """One saved run as ``rlm runs list`` shows it, from its root run's run_start and final events.

    ``termination_reason`` is ``"running"`` when the root run has no final event yet and its process is alive
    (``rlm runs active``), ``"interrupted"`` when it has none and never will (killed or crashed), and
    ``"unreadable"`` when the file holds no run event at all (then ``problem`` says why).
    """

    run_id: str
    task: str = ""
    environment: str = ""
    framework: str = ""
    model: str = ""
    labels: dict[str, str] = {}
    started: Optional[datetime] = None
    completed: bool = False
    termination_reason: str = "interrupted"
    steps: int = 0
    total_reward: float = 0.0
    tokens: Optional[int] = None
    cost: Optional[float] = None
    duration: Optional[float] = None
    answer: Optional[str] = None  # the final response, whole
    path: str = ""
    problem: Optional[str] = None

    @property
    def interrupted(self) -> bool:
        return self.termination_reason == "interrupted"


#: The keys of ``select_runs``'s filters (``rlm runs list --filter``, ``rlm leaderboard --runs --filter``).
RUN_FILTERS = ("model", "environment", "framework", "label", "status", "since", "until")


def select_runs(summaries: list[RunSummary], filters: list[str] | tuple[str, ...]) -> list[RunSummary]:
    """The runs matching every ``KEY=VALUE`` filter: ``model``, ``environment`` (``env``), ``framework`` (glob
    patterns, case-insensitive), ``label`` (``KEY`` or ``KEY=VALUE``, the value a glob), ``status`` (how the run
    ended: ``final``, ``max_steps``, ``error``, ``running``…), ``since`` / ``until`` (ISO dates or datetimes on
    the start, UTC unless said; a bare ``until`` date includes that day). A bad filter is an InputError."""
    import fnmatch

    checks: list[Callable[..., bool]] = []  # check(summary); each binds its values as defaulted parameters
    for item in filters:
        key, sep, value = str(item).partition("=")
        key = {"env": "environment", "labels": "label"}.get(key.strip().lower(), key.strip().lower())
        if not sep or key not in RUN_FILTERS:
            problem = f"unknown filter key {key!r}" if sep else f"filter {item!r} is not KEY=VALUE"
            raise InputError(problem, hint="filters: " + ", ".join(f"{k}=…" for k in RUN_FILTERS))
        value = value.strip()
        if key in ("since", "until"):
            moment = parse_moment(key, value)
            checks.append(lambda s, m=moment, k=key: s.started is not None and (s.started >= m if k == "since"
                                                                                 else s.started < m))
        elif key == "label":
            name, has, wanted = value.partition("=")
            checks.append(lambda s, n=name.strip(), h=has, w=wanted.strip(): n in s.labels and
                          (not h or fnmatch.fnmatchcase(s.labels[n], w)))
        else:  # a glob on a field, case-insensitive (status: how the run ended)
            field = "termination_reason" if key == "status" else key
            checks.append(lambda s, f=field, v=value.lower(): fnmatch.fnmatchcase(getattr(s, f).lower(), v))
    return [summary for summary in summaries if all(check(summary) for check in checks)]


def parse_moment(key: str, text: str) -> datetime:
    """``since`` / ``until`` as an aware datetime: an ISO date (``until``: the end of that day) or datetime."""
    from datetime import date, time as clock, timedelta

    raw = text.strip()
    try:
        if len(raw) == 10:
            moment = datetime.combine(date.fromisoformat(raw), clock(), tzinfo=timezone.utc)
            return moment + timedelta(days=1) if key == "until" else moment
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"filter {key}: {text!r} is not a date", hint=f"e.g. {key}=2026-01-31 or an ISO "
                         "datetime") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _iso(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, timezone.utc)


def _open(path: Path) -> IO[bytes]:
    """A trajectory opened for reading as the untrusted file it may be (a runs folder can come with a cloned
    project): a regular file, not a link, opened without blocking (``open_regular``), at most
    ``MAX_TRAJECTORY_BYTES``; a ``CorruptTrajectoryError`` otherwise."""
    try:
        handle = open_regular(path, follow_links=False)
    except OSError as exc:
        raise CorruptTrajectoryError(f"{path} is not a trajectory file: {exc.strerror or exc}",
                                     hint="a run's file is a regular file rlm run wrote, "
                                          "not a link") from exc
    if os.fstat(handle.fileno()).st_size > MAX_TRAJECTORY_BYTES:
        handle.close()
        raise CorruptTrajectoryError(f"{path} is larger than {MAX_TRAJECTORY_BYTES:,} bytes: not read",
                                     hint="a trajectory this large was not written by rlm run")
    return handle


def _tail_lines(path: Path) -> Iterator[bytes]:
    """The non-blank lines of a file, last first, read backwards in blocks."""
    with _open(path) as handle:
        end, rest = handle.seek(0, os.SEEK_END), b""
        while end > 0:  # the block before ``end``; ``rest``: the start of a line it cuts, read with the next block
            size = min(_TAIL_BLOCK, end)
            end = handle.seek(end - size)
            rest, *lines = (handle.read(size) + rest).split(b"\n")
            yield from (line for line in reversed(lines) if line.strip())
        if rest.strip():
            yield rest


def _event(raw: bytes | str) -> RunEvent:
    """One trajectory line as a RunEvent, with today's names (files of older schemas: ``compat``): the one screen
    every line read back goes through. ValueError when it is not a run event."""
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError(f"a JSON {type(value).__name__}, not an object")
    return RunEvent.model_validate(upgrade_event(value))


def _event_or_none(raw: bytes | str) -> Optional[RunEvent]:
    try:
        return _event(raw)
    except ValueError:
        return None


class RunStore:
    """The saved runs under ``<home>/runs``: list them, resolve ids, load events and results."""

    def __init__(self, home: Path) -> None:
        self.home = Path(home).expanduser()
        self.runs_dir = self.home / RUNS_DIR

    def files(self) -> list[Path]:
        """Every trajectory file, in name order (run ids sort by time)."""
        found = self.runs_dir.iterdir() if self.runs_dir.is_dir() else ()
        return sorted(p for p in found if p.suffix == SUFFIX and p.is_file() and not p.is_symlink())

    def list_runs(self) -> list[RunSummary]:
        """A summary of every saved run, newest first."""
        from rlm_host.trajectory.active import ActiveRuns

        running = ActiveRuns().running_ids()  # a run without a final event may still be going on
        summaries = [self.summarize(path) for path in self.files()]
        for summary in summaries:
            if summary.interrupted and summary.run_id in running:
                summary.termination_reason = "running"
        return sorted(summaries, key=lambda s: (s.started or _iso(0), s.run_id), reverse=True)

    def summarize(self, path: Path) -> RunSummary:
        """A run's summary, reading only its first line and its tail (the whole file if it must)."""
        try:
            with _open(path) as handle:
                first = next((_event_or_none(raw) for raw in handle if raw.strip()), None)
        except CorruptTrajectoryError as exc:  # swapped for a link, a FIFO or a huge file since it was listed
            return RunSummary(run_id=path.stem, path=str(path), termination_reason="unreadable", problem=exc.message)
        if first is not None and first.type == "run_start" and first.run_id == first.root_run_id:
            for event in filter(None, map(_event_or_none, _tail_lines(path))):
                if event.run_id == first.run_id and event.type == "final":
                    return self._with_final(self._start_fields(first, path), event.data)
                if event.run_id == first.run_id and event.type in ("step", "run_start"):
                    break  # the root run's last event is not its final one: it was interrupted
        return self._summary_from_events(path)

    def _summary_from_events(self, path: Path) -> RunSummary:
        """The summary of a run without a root final event (or an odd first line), from all its events."""
        events, modified = self._read(path, strict=False), _iso(path.stat().st_mtime)
        if not events:
            return RunSummary(run_id=path.stem, path=str(path), termination_reason="unreadable", started=modified,
                              problem=_unreadable(path))
        root_id = events[0].root_run_id
        summary, records = RunSummary(run_id=root_id, path=str(path)), []
        for event in (event for event in events if event.run_id == root_id):
            if event.type == "run_start":
                summary = self._start_fields(event, path)
            elif event.type == "step":
                try:
                    records.append(StepRecord.model_validate(event.data))
                except ValueError:
                    continue
            elif event.type == "final":
                return self._with_final(summary, event.data)
        summary.started = summary.started or modified
        summary.steps, summary.total_reward = len(records), round(sum(record.reward for record in records), 6)
        summary.tokens = sum(record.usage.total_tokens for record in records) or None
        return summary

    @staticmethod
    def _start_fields(event: RunEvent, path: Path) -> RunSummary:
        from rlm_host.trajectory.tree import run_labels

        data = event.data
        # a chat turn's task carries the conversation: its question is what the user asked
        task = clip(str(data.get("question") or data.get("task") or ""), TASK_CHARS, one_line=True)
        return RunSummary(run_id=event.root_run_id, task=task, started=_iso(event.ts), path=str(path),
                          environment=str(data.get("environment") or ""), framework=str(data.get("framework") or ""),
                          model=str(data.get("model") or ""), labels=run_labels(data))

    @staticmethod
    def _with_final(summary: RunSummary, data: dict[str, Any]) -> RunSummary:
        try:
            result = RunResult.model_validate(data)
        except ValueError:
            summary.termination_reason = str(data.get("termination_reason") or "error")
            return summary
        return summary.model_copy(update={
            "task": summary.task or clip(result.task, TASK_CHARS, one_line=True), "answer": result.final_response,
            "environment": summary.environment or result.environment, "model": summary.model or result.model,
            "framework": summary.framework or result.framework, "completed": result.completed,
            "termination_reason": result.termination_reason, "steps": result.steps, "duration": result.duration_s,
            "total_reward": result.total_reward, "tokens": result.usage.total_tokens,
            "cost": result.cost if result.cost is not None else result.usage.cost})

    def resolve(self, ref: str | Path) -> Path:
        """The trajectory file of ``ref``: ``latest``, a run id, a unique prefix of one, or a ``.jsonl`` path."""
        text = "" if isinstance(ref, Path) else ref.strip()
        if isinstance(ref, Path) or text.endswith(SUFFIX) or "/" in text or "\\" in text:
            path = ref if isinstance(ref, Path) else Path(text).expanduser()
            if not path.is_file():
                raise RunNotFoundError(f"no trajectory file {path}", hint="check the path, or give a run id")
            return path.resolve() if path.is_symlink() else path  # a link you name is followed, a planted one not
        ref = text
        if not ref:
            raise RunNotFoundError("no run id given", hint="give a run id, a prefix of one, or 'latest'")
        if ref == "latest":
            runs = self.list_runs()
            if not runs:
                raise RunNotFoundError(f"no saved runs in {self.runs_dir}", hint=_NO_RUNS_HINT)
            return Path(runs[0].path)
        files = self.files()
        for candidate in (ref, f"run_{ref}"):
            # a run's file is unique by name: an exact match is the one
            matches = [p for p in files if p.stem == candidate] or [p for p in files if p.stem.startswith(candidate)]
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                shown = ", ".join(p.stem for p in matches[:5]) + (", …" if len(matches) > 5 else "")
                raise AmbiguousRunError(f"run id prefix {ref!r} matches {len(matches)} runs: {shown}",
                                        hint="give more characters of the run id")
        hint = "rlm runs list shows the saved runs" if files else _NO_RUNS_HINT
        raise RunNotFoundError(f"no saved run matches {ref!r} in {self.runs_dir}", hint=hint)

    def load(self, ref: str | Path) -> list[RunEvent]:
        """Every event of a saved run tree, in order (see ``resolve`` for what ``ref`` may be)."""
        return self._read(self.resolve(ref))

    def result(self, ref: str | Path) -> Optional[RunResult]:
        """The root run's RunResult from its final event; None when the run was interrupted."""
        from rlm_host.trajectory.tree import Replay

        path = self.resolve(ref)
        result = Replay(self._read(path)).result
        return result if result is None or result.trajectory_path else result.model_copy(update={"trajectory_path":
                                                                                                      str(path)})

    def _read(self, path: Path, *, strict: bool = True) -> list[RunEvent]:
        """Parse a trajectory file; a bad last line (cut short by a kill) is skipped with a warning.

        With ``strict=False`` (summaries) every bad line is skipped silently and an empty file is no error.
        """
        with _open(path) as handle:
            text = handle.read().decode("utf-8", errors="replace")
        lines = [(number, line) for number, line in enumerate(text.split("\n"), 1) if line.strip()]
        events: list[RunEvent] = []
        for index, (number, line) in enumerate(lines):
            try:
                events.append(_event(line))
            except ValueError as exc:
                reason = _reason(exc)
                if not strict:
                    continue
                if not events:  # not one valid event before it: not a run's record at all
                    raise CorruptTrajectoryError(f"{path} is not a trajectory: line {number} is not a run event "
                                                 f"({reason})", hint="give a run id or a .jsonl file that "
                                                 "rlm run wrote (rlm runs list shows them)") from exc
                if index == len(lines) - 1:
                    from rlm_host import logs

                    logs.get_logger("rlm.trajectory").warning("truncated last line skipped", path=str(path),
                                                              line=number,
                                                              why="the run was probably killed")
                    continue
                hint = "the file was damaged or edited by hand; remove that line or the file"
                raise CorruptTrajectoryError(f"{path}:{number}: not a valid run event ({reason})", hint=hint) from exc
        if not events and strict:
            raise CorruptTrajectoryError(f"{path} holds no run events", hint="the run stopped before its first step")
        return events


def _unreadable(path: Path) -> str:
    """Why a file in the runs folder holds no run event, in a few words."""
    with _open(path) as handle:
        head = handle.read(4096)
    if not head.strip():
        return "empty: the run stopped before its first event was written"
    if b"\x00" in head or head.decode("utf-8", errors="replace").count("\ufffd") > len(head) // 20:
        return f"not a trajectory: binary data ({path.stat().st_size:,} bytes)"
    first = head.split(b"\n", 1)[0]
    try:
        _event(first)
    except ValueError as exc:
        return f"not a trajectory: its first line is not a run event ({_reason(exc)})"
    return "not a trajectory: no line is a valid run event"


def _reason(exc: ValueError) -> str:
    """The first complaint of a validation error, in a few words."""
    if isinstance(exc, ValidationError):
        return problems(exc, root="line", most=1)
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
