"""The index of a trace file: one streaming pass, then reused while it is still this file's (``storage``).

For each trace it keeps the byte ranges of the lines holding its spans (adjacent lines merged into one range, so
a trace written in one piece is one seek and one read) and a summary: spans, error spans, services, models,
agents, tokens, start and end. Only the index lives in memory, never the file, and no line past
``reader.MAX_LINE_BYTES``. It is stored signed next to the file (``<name>.rlm-index``) when that folder is this
user's alone, else under the user's cache folder; a stored index is used only when signed by this user, bound to
the file's content and sound (``checks``). Offsets of a gzip file count decompressed bytes.
"""

from __future__ import annotations

import gc
import hashlib
import os
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

import msgspec
from rlm_host import InputError

from rlm_env_traces import storage
from rlm_env_traces.checks import problems
from rlm_env_traces.reader import (GZIP_ERRORS, MAX_LINE_BYTES, MAX_TRACES, TraceLimitError,
                                   checked_stat, expansion_limit, is_gzip, open_trace_file, read_error,
                                   skip_rest)
from rlm_env_traces.safefiles import make_private_dirs, replace_file
from rlm_env_traces.spans import MalformedLine, summaries

__all__ = ["TraceEntry", "TraceIndex", "NameSet", "build", "load_or_build", "open_trace_file"]

INDEX_VERSION = 3
SUFFIX = ".rlm-index"
#: Malformed line numbers kept for the report (all are counted).
MALFORMED_LISTED = 20
#: Files from this size up are indexed by one process per core.
PARALLEL_BYTES = 32 << 20
#: A span whose trace id is longer than this is dropped (its line counted malformed).
MAX_ID_CHARS = 1_024
#: Service, model and agent names are kept to this many characters.
NAME_CHARS = 256
#: A trace's token sums are kept within 0..TOKENS_CAP, its times within 64 bits (else None).
TOKENS_CAP = 1 << 62
TIME_CAP = 1 << 63


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
    """The whole index, as stored: ``data_size`` is the bytes its ranges index (decompressed, for gzip),
    ``fingerprint`` the trace file's (``storage.fingerprint``)."""

    version: int
    size: int
    mtime_ns: int
    data_size: int
    fingerprint: str
    lines: int
    spans: int
    malformed: int
    malformed_lines: list[int]
    traces: dict[str, TraceEntry]
    name_sets: list[NameSet]

    def names(self, entry: TraceEntry) -> NameSet:
        return self.name_sets[entry.names]


def load_or_build(path: Path, cache_dir: Optional[Path] = None) -> tuple[TraceIndex, Optional[Path]]:
    """The index of ``path`` and where it is stored: a stored one if it is still this file's, signed by this user
    and sound, else built and stored (None as the place when it could be stored nowhere)."""
    found = checked_stat(path)
    mark = storage.fingerprint(path, found)
    compressed = is_gzip(path)
    candidates = [sidecar_path(path), cached_path(path, cache_dir)]
    for candidate in candidates:
        index = _stored(candidate, found, mark, compressed)
        if index is not None:
            return index, candidate
    index = build(path, found, mark=mark)
    sealed = storage.seal(msgspec.msgpack.encode(index))
    if sealed is None:
        return index, None
    for candidate in candidates:
        try:
            if candidate.parent == candidates[-1].parent:
                make_private_dirs(candidate.parent)
            return index, replace_file(candidate.parent, candidate.name, sealed)
        except OSError:
            continue  # a read-only folder, or one other users can write: try the cache folder
    return index, None


def _stored(candidate: Path, found: os.stat_result, mark: str, compressed: bool) -> Optional[TraceIndex]:
    """The index stored at ``candidate`` if it passes every check (``storage``'s docstring), else None."""
    payload = storage.unseal(candidate)
    if payload is None:
        return None
    try:
        with _no_gc():
            index = msgspec.msgpack.decode(payload, type=TraceIndex)
    except (msgspec.DecodeError, RecursionError):
        return None
    if (index.version, index.size, index.mtime_ns, index.fingerprint) != (INDEX_VERSION, found.st_size,
                                                                          found.st_mtime_ns, mark):
        return None
    return index if problems(index, found.st_size, compressed) is None else None


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SUFFIX)


def cached_path(path: Path, cache_dir: Optional[Path] = None) -> Path:
    """Where the index goes when the file's folder is not this user's alone: a cache folder, named by the path."""
    base = cache_dir or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlm" / "traces"
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
    return base / f"{path.name}.{digest}{SUFFIX}"


def build(path: Path, stat: Optional[os.stat_result] = None, workers: Optional[int] = None,
          mark: Optional[str] = None) -> TraceIndex:
    """One streaming pass over the file, every line read once and only summaries kept. A large uncompressed
    file is cut at line boundaries into one part per core, scanned in parallel, and the parts merged."""
    stat = stat or checked_stat(path)
    mark = mark or storage.fingerprint(path, stat)
    workers = workers or os.cpu_count() or 1
    compressed = is_gzip(path)
    if compressed or workers == 1 or stat.st_size < PARALLEL_BYTES:
        part = _scan(path, 0, None, expansion_limit(path, stat.st_size, compressed))
    else:
        from concurrent.futures import ProcessPoolExecutor

        bounds = _line_bounds(path, stat.st_size, workers)
        with ProcessPoolExecutor(len(bounds) - 1) as pool:
            parts = list(pool.map(_scan_encoded, [path] * (len(bounds) - 1), bounds[:-1], bounds[1:]))
        with _no_gc():
            part = _merge([msgspec.msgpack.decode(p, type=_Part) for p in parts])
    if part.data_size == 0:
        raise InputError(f"trace file is empty{' or corrupt' if part.malformed else ''}: {path}",
                         hint="give a JSON Lines file of spans or OTLP batches (.gz too)")
    if len(part.traces) > MAX_TRACES:
        raise _too_many_traces(path)
    name_sets = _sorted_names(part)
    return TraceIndex(INDEX_VERSION, stat.st_size, stat.st_mtime_ns, part.data_size, mark, part.lines, part.spans,
                      part.malformed, part.malformed_lines[:MALFORMED_LISTED], part.traces, name_sets)


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

    data_size: int  # bytes scanned
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
        if found is None:  # a new combination: its names cut to NAME_CHARS (only here, not once per trace)
            kept = (_names(key[0]), _names(key[1]), _names(key[2]))
            found = self._ids.get(kept)
            if found is None:
                found = self._ids[kept] = len(self.rows)
                self.rows.append(NameSet(*kept))
            self._ids[key] = found
        return found


def _names(names: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted({name[:NAME_CHARS] for name in names}))


def _line_bounds(path: Path, size: int, parts: int) -> list[int]:
    """Offsets cutting the file into ``parts`` stretches, each starting at the beginning of a line (found by
    reading in chunks: a cut inside a huge line never reads it whole)."""
    bounds = [0]
    with open_trace_file(path) as handle:
        for number in range(1, parts):
            handle.seek(max(bounds[-1], size * number // parts))
            skip_rest(handle.readline)
            if handle.tell() < size:
                bounds.append(handle.tell())
    return sorted(set(bounds)) + [size]


def _scan_encoded(path: Path, start: int, end: int) -> bytes:
    return msgspec.msgpack.encode(_scan(path, start, end, expansion_limit(path, end, False)))


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


def _scan(path: Path, start: int, end: Optional[int], most: int) -> _Part:
    with _no_gc():
        try:
            return _scan_lines(path, start, end, most)
        except OSError as exc:
            raise read_error(path, exc) from None


def _scan_lines(path: Path, start: int, end: Optional[int], most: int) -> _Part:
    """Index the lines from byte ``start`` up to ``end`` (None: the end of the file), reading at most ``most``
    bytes. A line over ``MAX_LINE_BYTES`` is skipped in chunks and counted malformed; a corrupt gzip stream ends
    the scan with one more malformed line; more than ``MAX_TRACES`` traces is a TraceLimitError.

    The hot loop of a 1 GB build: each trace's running state is a plain list (cheaper to update than a struct),
    and its (service, model, agent) triples one set, turned into a TraceEntry once at the end."""
    states: dict[str, list[Any]] = {}  # trace id → [ranges, spans, error spans, in, out, start, end, triples]
    lines = spans = malformed = 0
    malformed_lines: list[int] = []
    offset = start
    limit = MAX_LINE_BYTES + 1
    stop = end if end is not None else start + most
    with open_trace_file(path) as handle:
        handle.seek(start)
        readline = handle.readline
        try:
            for lines, line in enumerate(iter(partial(readline, limit), b""), 1):
                length = len(line)
                try:
                    if length == limit and line[-1] != 10:  # over-long: skipped, never held whole
                        length += skip_rest(readline)
                        raise MalformedLine("longer than the line limit")
                    found = summaries(line)
                except MalformedLine:
                    found = []
                    malformed += 1
                    if len(malformed_lines) < MALFORMED_LISTED:
                        malformed_lines.append(lines)
                for trace_id, error, service, model, agent, input_tokens, output_tokens, begin, finish in found:
                    state = states.get(trace_id)
                    if state is None:
                        if len(trace_id) > MAX_ID_CHARS:  # not an id: the span dropped, its line malformed
                            spans, malformed = spans - 1, malformed + 1
                            malformed_lines += [lines][: MALFORMED_LISTED - len(malformed_lines)]
                            continue
                        if len(states) >= MAX_TRACES:
                            raise _too_many_traces(path)
                        states[trace_id] = [[(offset, length)], 1, error, input_tokens, output_tokens, begin, finish,
                                            {(service, model, agent)}]
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
                if offset >= stop:
                    break
            if end is None and offset - start >= most and readline(1):
                raise TraceLimitError(f"{path} decompresses to more than {most:,} bytes",
                                      hint="decompress it yourself if it really is this large")
        except GZIP_ERRORS:  # a corrupt or truncated stream: what came before it stays indexed
            lines, malformed = lines + 1, malformed + 1
            malformed_lines += [lines][: MALFORMED_LISTED - len(malformed_lines)]
    table = _NameTable()
    traces = {trace_id: _finished(table, state) for trace_id, state in states.items()}
    return _Part(offset - start, lines, spans, malformed, malformed_lines, traces, table.rows)


def _too_many_traces(path: Path) -> TraceLimitError:
    return TraceLimitError(f"{path} holds more than {MAX_TRACES:,} traces", hint="split the file into smaller ones")


def _finished(table: _NameTable, state: list[Any]) -> TraceEntry:
    """A trace's running state as its entry: token sums kept within 0..TOKENS_CAP and times within 64 bits, so
    no line can make the index unstorable (checked once per trace, not in the per-span loop)."""
    ranges, spans, errors, tokens_in, tokens_out, begin, finish, triples = state
    if not 0 <= tokens_in <= TOKENS_CAP:
        tokens_in = TOKENS_CAP if tokens_in > 0 else 0
    if not 0 <= tokens_out <= TOKENS_CAP:
        tokens_out = TOKENS_CAP if tokens_out > 0 else 0
    if begin is not None and not -TIME_CAP <= begin < TIME_CAP:
        begin = None
    if finish is not None and not -TIME_CAP <= finish < TIME_CAP:
        finish = None
    return TraceEntry(ranges, spans, int(errors), _names_id(table, triples), tokens_in, tokens_out, begin, finish)


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
    merged = _Part(0, 0, 0, 0, [], {}, table.rows)
    for part in parts:
        merged.data_size += part.data_size
        merged.malformed_lines += [merged.lines + number for number in part.malformed_lines]
        merged.lines, merged.spans, merged.malformed = (merged.lines + part.lines, merged.spans + part.spans,
                                                        merged.malformed + part.malformed)
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
            known.input_tokens = min(known.input_tokens + entry.input_tokens, TOKENS_CAP)
            known.output_tokens = min(known.output_tokens + entry.output_tokens, TOKENS_CAP)
            starts = [v for v in (known.start, entry.start) if v is not None]
            ends = [v for v in (known.end, entry.end) if v is not None]
            known.start, known.end = min(starts, default=None), max(ends, default=None)
            ours, theirs = table.rows[known.names], part.name_sets[entry.names]
            known.names = table.id(ours.services + theirs.services, ours.models + theirs.models,
                                   ours.agents + theirs.agents)
    return merged
