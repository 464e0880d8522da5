"""Opening a trace file and reading its lines with bounded memory: the one place that touches the raw bytes.

A trace file is untrusted input (a dump from production, a download), so the file is opened without blocking
(a FIFO planted in its place is refused, not waited on), only a regular file is read, a gzip file is told by its
magic number, and no line is ever read whole past ``MAX_LINE_BYTES``: a longer line is skipped in chunks and
counted malformed. The limits of a build (traces, gzip expansion) live here too, with their error.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from rlm_host import InputError

#: A line longer than this is counted malformed and skipped in chunks, never held whole.
MAX_LINE_BYTES = 16 << 20
#: Traces one index may hold (about 540 bytes of memory each): past it, the file is refused.
MAX_TRACES = 2_000_000
#: A gzip file may expand to this many times its size (and always to ``GZIP_FLOOR_BYTES``).
GZIP_EXPANSION = 200
GZIP_FLOOR_BYTES = 1 << 30
#: Bytes read at a time while skipping an over-long line.
SKIP_CHUNK = 1 << 20
#: What a corrupt or truncated gzip stream raises while it is read.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)


class TraceLimitError(InputError):
    """A trace file, or an operation on it, went past one of the limits that keep the host bounded."""


def checked_stat(path: Path) -> os.stat_result:
    """The file's stat; InputError when it is missing, empty or not a regular file."""
    try:
        found = os.stat(path)
    except OSError:
        found = None
    if found is None or not stat.S_ISREG(found.st_mode):
        raise InputError(f"trace file not found: {path}", hint="give a JSON Lines file of spans or OTLP batches")
    if found.st_size == 0:
        raise InputError(f"trace file is empty: {path}", hint="give a JSON Lines file of spans or OTLP batches")
    return found


@contextmanager
def open_trace_file(path: Path) -> Iterator[io.BufferedIOBase]:
    """The file as bytes, decompressed when it is gzip (by its magic number, not its name). Opened non-blocking
    and checked to be a regular file on the open descriptor itself."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot open trace file {path}: {exc.strerror or exc}") from None
    raw = os.fdopen(fd, "rb")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"not a regular file: {path}")
        if os.pread(fd, 2, 0) == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw, mode="rb") as unpacked:
                yield unpacked
        else:
            yield raw
    finally:
        raw.close()


def is_gzip(path: Path) -> bool:
    with open_trace_file(path) as handle:
        return isinstance(handle, gzip.GzipFile)


def skip_rest(readline: Callable[[int], bytes]) -> int:
    """Read past the rest of an over-long line in chunks; the bytes skipped (its newline included)."""
    skipped = 0
    while True:
        piece = readline(SKIP_CHUNK)
        skipped += len(piece)
        if not piece or piece[-1:] == b"\n":
            return skipped


def range_lines(handle: io.BufferedIOBase, offset: int, length: int, data_size: int) -> Iterator[bytes]:
    """The lines in ``length`` bytes from ``offset``, each at most ``MAX_LINE_BYTES`` (a longer one is skipped).
    A range outside the file's data is an InputError, whatever an index says."""
    if offset < 0 or length <= 0 or offset + length > data_size:
        raise InputError(f"a byte range ({offset}, {length}) lies outside the trace data ({data_size} bytes)")
    handle.seek(offset)
    readline = handle.readline
    remaining = length
    while remaining > 0:
        line = readline(min(remaining, MAX_LINE_BYTES + 1))
        if not line:
            return
        remaining -= len(line)
        if len(line) > MAX_LINE_BYTES and line[-1:] != b"\n":  # over-long: skip to its end, never hold it
            while remaining > 0:
                piece = readline(min(remaining, SKIP_CHUNK))
                if not piece:
                    return
                remaining -= len(piece)
                if piece[-1:] == b"\n":
                    break
            continue
        yield line


def expansion_limit(path: Path, size: int, compressed: bool) -> int:
    """How many bytes a file of ``size`` may yield: a bounded multiple of it for gzip, no limit otherwise."""
    return max(GZIP_FLOOR_BYTES, GZIP_EXPANSION * size) if compressed else 1 << 62


def read_error(path: Path, exc: BaseException) -> InputError:
    """A read failure as a clean error naming the file."""
    if isinstance(exc, GZIP_ERRORS):
        return InputError(f"{path}: corrupt or truncated gzip data ({exc})")
    return InputError(f"cannot read trace file {path}: {getattr(exc, 'strerror', None) or exc}")
