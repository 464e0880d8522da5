"""The sidecar index of a trace file: one streaming pass, then reused while the file's size and mtime hold.

For each trace it keeps the byte ranges of the lines holding its spans (adjacent lines merged into one range, so
a trace written in one piece is one seek and one read) and a summary: spans, error spans, services, models,
agents, tokens, start and end. Only the index lives in memory, never the file. It is stored as msgpack next to
the file (``<name>.rlm-index``), or under the user's cache directory when that folder is read-only. Offsets of a
gzip file count decompressed bytes.
"""

from __future__ import annotations

import gc
import gzip
import hashlib
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Optional

import msgspec
from rlm_host import InputError

from rlm_env_traces.spans import MalformedLine, summaries

INDEX_VERSION = 2
SUFFIX = ".rlm-index"
#: Malformed line numbers kept for the report (all are counted).
MALFORMED_LISTED = 20
#: Files from this size up are indexed by one process per core.
PARALLEL_BYTES = 32 << 20


class TraceEntry(msgspec.Struct, array_like=True, gc=False):
    """One trace: where its lines are and what they say (untracked by the cyclic GC: it holds no cycles, and
    hundreds of thousands of tracked entries make every collection slow). Its services, models and agents are
    one row of the index's ``name_sets`` table: most traces share a handful of combinations, and a list of
    strings per trace was a third of the index's memory."""

    ranges: list[tuple[int, int]]  # (offset, length) in the (decompressed) file
    spans: int = 0
    error_spans: int = 0
    names: int = 0  # row in TraceIndex.name_sets
    input_tokens: int = 0
    output_tokens: int = 0
    start: Optional[int] = None  # unix nanoseconds
    end: Optional[int] = None

    @property
    def has_errors(self) -> bool:
        return self.error_spans > 0


class NameSet(msgspec.Struct, array_like=True, gc=False):
    """The sorted services, models and agents of one or more traces."""

    services: tuple[str, ...]
    models: tuple[str, ...]
    agents: tuple[str, ...]


class TraceIndex(msgspec.Struct):
    """The whole index, as stored in the sidecar file."""

    version: int
    size: int
    mtime_ns: int
    lines: int
    spans: int
    malformed: int
    malformed_lines: list[int]
    traces: dict[str, TraceEntry]
    name_sets: list[NameSet]

    def names(self, entry: TraceEntry) -> NameSet:
        return self.name_sets[entry.names]


def open_trace_file(path: Path) -> IO[bytes]:
    """The file as bytes, decompressed when it is gzip (checked by its magic number, not its name)."""
    with path.open("rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rb") if compressed else path.open("rb")


def load_or_build(path: Path, cache_dir: Optional[Path] = None) -> tuple[TraceIndex, Path]:
    """The index of ``path`` and where it is stored: the stored one if still valid, else built and saved."""
    stat = _checked_stat(path)
    candidates = [sidecar_path(path), cached_path(path, cache_dir)]
    for candidate in candidates:
        with _no_gc():
            index = _read(candidate)
        if index is not None and (index.size, index.mtime_ns) == (stat.st_size, stat.st_mtime_ns):
            return index, candidate
    index = build(path, stat)
    for candidate in candidates:
        try:
            candidate.parent.mkdir(parents=True, exist_ok=True)
            temporary = candidate.with_name(candidate.name + f".{os.getpid()}.tmp")
            temporary.write_bytes(msgspec.msgpack.encode(index))
            temporary.replace(candidate)
            return index, candidate
        except OSError:
            continue  # a read-only folder: try the cache directory
    raise InputError(f"cannot store the index of {path} next to it or in {candidates[-1].parent}")


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def cached_path(path: Path, cache_dir: Optional[Path] = None) -> Path:
    """Where the index goes when the file's folder is read-only: a cache folder, named by the file's path."""
    base = cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlm" / "traces"
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return base / f"{path.name}.{digest}{SUFFIX}"


def _checked_stat(path: Path) -> os.stat_result:
    if not path.is_file():
        raise InputError(f"trace file not found: {path}", hint="give a JSON Lines file of spans or OTLP batches")
    stat = path.stat()
    if stat.st_size == 0:
        raise InputError(f"trace file is empty: {path}", hint="give a JSON Lines file of spans or OTLP batches")
    return stat


def _read(candidate: Path) -> Optional[TraceIndex]:
    try:
        index = msgspec.msgpack.decode(candidate.read_bytes(), type=TraceIndex)
    except (OSError, msgspec.DecodeError):
        return None
    return index if index.version == INDEX_VERSION else None


def build(path: Path, stat: Optional[os.stat_result] = None, workers: Optional[int] = None) -> TraceIndex:
    """One streaming pass over the file, every line read once and only summaries kept. A large uncompressed
    file is cut at line boundaries into one part per core, scanned in parallel, and the parts merged."""
    stat = stat or _checked_stat(path)
    workers = workers or os.cpu_count() or 1
    with open_trace_file(path) as handle:
        compressed = isinstance(handle, gzip.GzipFile)
    if compressed or workers == 1 or stat.st_size < PARALLEL_BYTES:
        part = _scan(path, 0, None)
    else:
        from concurrent.futures import ProcessPoolExecutor

        bounds = _line_bounds(path, stat.st_size, workers)
        with ProcessPoolExecutor(len(bounds) - 1) as pool:
            parts = list(pool.map(_scan_encoded, [path] * (len(bounds) - 1), bounds[:-1], bounds[1:]))
        with _no_gc():
            part = _merge([msgspec.msgpack.decode(p, type=_Part) for p in parts])
    name_sets = _sorted_names(part)
    return TraceIndex(INDEX_VERSION, stat.st_size, stat.st_mtime_ns, part.lines, part.spans, part.malformed,
                      part.malformed_lines[:MALFORMED_LISTED], part.traces, name_sets)  # fmt: skip


def _sorted_names(part: _Part) -> list[NameSet]:
    """The name sets the traces use, sorted, the traces renumbered to match: the same file gives the same index
    however many parts it was scanned in (a merge leaves behind the rows of traces it joined)."""
    used = {entry.names for entry in part.traces.values()}
    order = sorted(used, key=lambda row: msgspec.structs.astuple(part.name_sets[row]))
    renumbered = {old: new for new, old in enumerate(order)}
    for entry in part.traces.values():
        entry.names = renumbered[entry.names]
    return [part.name_sets[row] for row in order]


class _Part(msgspec.Struct):
    """The index of a stretch of lines (malformed line numbers counted from its first line)."""

    lines: int
    spans: int
    malformed: int
    malformed_lines: list[int]
    traces: dict[str, TraceEntry]
    name_sets: list[NameSet]


class _NameTable:
    """Name sets numbered as they are first seen, each stored once."""

    def __init__(self) -> None:
        self.rows: list[NameSet] = []
        self._ids: dict[tuple[tuple[str, ...], ...], int] = {}

    def id(self, services: Iterable[str], models: Iterable[str], agents: Iterable[str]) -> int:
        key = (tuple(sorted(set(services))), tuple(sorted(set(models))), tuple(sorted(set(agents))))
        found = self._ids.get(key)
        if found is None:
            found = self._ids[key] = len(self.rows)
            self.rows.append(NameSet(*key))
        return found


def _line_bounds(path: Path, size: int, parts: int) -> list[int]:
    """Offsets cutting the file into ``parts`` stretches, each starting at the beginning of a line."""
    bounds = [0]
    with path.open("rb") as handle:
        for number in range(1, parts):
            handle.seek(max(bounds[-1], size * number // parts))
            handle.readline()
            if handle.tell() < size:
                bounds.append(handle.tell())
    return sorted(set(bounds)) + [size]


def _scan_encoded(path: Path, start: int, end: int) -> bytes:
    return msgspec.msgpack.encode(_scan(path, start, end))


@contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic GC paused: building the index allocates only acyclic containers, and with hundreds of thousands
    of them alive every collection walks them all (the 1 GB build spent most of its time there)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _scan(path: Path, start: int, end: Optional[int]) -> _Part:
    with _no_gc():
        return _scan_lines(path, start, end)


def _scan_lines(path: Path, start: int, end: Optional[int]) -> _Part:
    """Index the lines from byte ``start`` up to ``end`` (None: the end of the file).

    The hot loop of a 1 GB build: each trace's running state is a plain list (cheaper to update than a struct),
    and its (service, model, agent) triples one set, turned into a TraceEntry once at the end."""
    states: dict[str, list[Any]] = {}  # trace id → [ranges, spans, error spans, in, out, start, end, triples]
    lines = spans = malformed = 0
    malformed_lines: list[int] = []
    offset = start
    with open_trace_file(path) as handle:
        handle.seek(start)
        for lines, line in enumerate(handle, 1):
            length = len(line)
            try:
                found = summaries(line)
            except MalformedLine:
                found = ()
                malformed += 1
                if len(malformed_lines) < MALFORMED_LISTED:
                    malformed_lines.append(lines)
            for trace_id, error, service, model, agent, input_tokens, output_tokens, begin, finish in found:
                state = states.get(trace_id)
                if state is None:
                    states[trace_id] = [[(offset, length)], 1, error, input_tokens, output_tokens, begin, finish,
                                        {(service, model, agent)}]  # fmt: skip
                    continue
                ranges = state[0]  # _add_range, inlined: this loop runs once per span
                last_offset, last_length = ranges[-1]
                if last_offset + last_length == offset:
                    ranges[-1] = (last_offset, last_length + length)
                elif last_offset + last_length < offset:
                    ranges.append((offset, length))
                state[1] += 1
                state[2] += error
                state[3] += input_tokens
                state[4] += output_tokens
                if begin is not None and (state[5] is None or begin < state[5]):
                    state[5] = begin
                if finish is not None and (state[6] is None or finish > state[6]):
                    state[6] = finish
                state[7].add((service, model, agent))
            spans += len(found)
            offset += length
            if end is not None and offset >= end:
                break
    table = _NameTable()
    traces = {trace_id: TraceEntry(state[0], state[1], int(state[2]), _names_id(table, state[7]), *state[3:7])
              for trace_id, state in states.items()}  # fmt: skip
    return _Part(lines, spans, malformed, malformed_lines, traces, table.rows)


def _names_id(table: _NameTable, triples: set[tuple[Optional[str], ...]]) -> int:
    """The table row of a trace's (service, model, agent) triples, the missing names left out."""
    services, models, agents = (filter(None, names) for names in zip(*triples))
    return table.id(services, models, agents)


def _add_range(ranges: list[tuple[int, int]], offset: int, length: int) -> None:
    """Add a line's bytes to a trace's ranges: the last range grows when the line follows it."""
    last_offset, last_length = ranges[-1]
    if last_offset + last_length == offset:
        ranges[-1] = (last_offset, last_length + length)
    elif last_offset + last_length < offset:  # (else this line is already in the range)
        ranges.append((offset, length))


def _merge(parts: list[_Part]) -> _Part:
    """The parts of a file, in order, as one: a trace found in several parts has their ranges and sums."""
    table = _NameTable()
    merged = _Part(0, 0, 0, [], {}, table.rows)
    for part in parts:
        merged.malformed_lines += [merged.lines + number for number in part.malformed_lines]
        merged.lines, merged.spans, merged.malformed = (merged.lines + part.lines, merged.spans + part.spans,
                                                        merged.malformed + part.malformed)  # fmt: skip
        renumbered = [table.id(*names) for names in (msgspec.structs.astuple(row) for row in part.name_sets)]
        for trace_id, entry in part.traces.items():
            known = merged.traces.get(trace_id)
            if known is None:
                entry.names = renumbered[entry.names]
                merged.traces[trace_id] = entry
                continue
            for offset, length in entry.ranges:
                _add_range(known.ranges, offset, length)
            known.spans += entry.spans
            known.error_spans += entry.error_spans
            known.input_tokens += entry.input_tokens
            known.output_tokens += entry.output_tokens
            starts = [v for v in (known.start, entry.start) if v is not None]
            ends = [v for v in (known.end, entry.end) if v is not None]
            known.start, known.end = min(starts, default=None), max(ends, default=None)
            ours, theirs = table.rows[known.names], part.name_sets[entry.names]
            known.names = table.id(ours.services + theirs.services, ours.models + theirs.models,
                                   ours.agents + theirs.agents)  # fmt: skip
    return merged
