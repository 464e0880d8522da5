"""The context of a run: loading it (``rlm run --context``) and describing it without showing it.

Each file goes through the context loader that claims its suffix (``ContextLoaderSpec``; the caller passes the lookup,
see ``rlm_host.engine.context_loading``): built in, a ``.json`` file loads as the JSON value it holds and a ``.jsonl``
file as the list of its lines' values, any other text file as text; a binary file no loader claims is bad input. Several
files or a directory give a ``Documents`` list whose ``names`` are the files' paths (a loader returning documents, such
as a PDF's pages, adds them all: ``report.pdf#p3``), so the REPL can offer ``list_files()`` / ``load_file()``; in a
directory, a file no loader can read is skipped with a warning naming it. ``describe_context`` gives the metadata a
model and a trajectory see instead of the content; the runner computes it once per run (a large JSON context is
serialised once, not at every step).
"""

from __future__ import annotations

import contextlib
import errno
import functools
from dataclasses import dataclass
import json
import os
import stat
import sys
from pathlib import Path
from typing import IO, Any, BinaryIO, Callable, Iterator, Optional, Protocol

from rlm_host.errors import InputError
from rlm_host.redact import redacted_head

BINARY_PROBE = 8192
#: How many document lengths or keys a description lists.
MAX_LISTED = 20
#: Preview characters kept in a run's description (environments show fewer: pure_rlm 200 by default).
PREVIEW_CHARS = 2000
#: A single text file of at least this many bytes is a :class:`TextFile` when the caller allows it.
LAZY_BYTES = 8 * 1024 * 1024


class Documents(list):
    """A list of documents that remembers where each came from."""

    def __init__(self, documents: list[Any], names: list[str]) -> None:
        super().__init__(documents)
        self.names = names


class TextFile:
    """A large text file given as the whole context, kept on disk: the host never holds its text.

    A sandbox runtime that can load a file itself gets the file (the process and Docker runtimes), Monty gets it
    in pieces; code that needs the text calls :meth:`read` (or :func:`context_value`). It reads as the ``text``
    loader does: UTF-8 with undecodable bytes replaced and universal newlines. ``chars`` and ``head`` come from
    one streaming pass, made when first asked for.
    """

    CHUNK_CHARS = 4 * 1024 * 1024

    def __init__(self, path: Path) -> None:
        self.path = Path(path).resolve()

    def chunks(self, size: int = CHUNK_CHARS) -> Iterator[str]:
        """The text in pieces of ``size`` characters."""
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            while piece := handle.read(size):
                yield piece

    def read(self) -> str:
        """The whole text, grown in place piece by piece (peaks near the text's size, not twice it)."""
        text = ""
        for piece in self.chunks():
            text += piece
        return text

    @functools.cached_property
    def _scan(self) -> tuple[int, str]:
        """(characters, the first ``PREVIEW_CHARS`` of them), from one streaming pass."""
        pieces = self.chunks()
        first = next(pieces, "")
        return len(first) + sum(len(piece) for piece in pieces), first[:PREVIEW_CHARS]

    @property
    def chars(self) -> int:
        return self._scan[0]

    def head(self, chars: int) -> str:
        return self._scan[1][:chars]

    def __repr__(self) -> str:
        return f"TextFile({str(self.path)!r})"


@dataclass(frozen=True)
class ContextFiles:
    """A context not loaded yet: the paths of ``--context`` (``-`` for stdin), or a path given to ``RLM``. The
    run's planner loads them the way its environment needs (a path, a file left on disk, text, documents)."""

    paths: tuple[str, ...]

    @classmethod
    def of(cls, context: Any) -> Any:
        """A path (``os.PathLike``) or a list of them as ``ContextFiles``; anything else unchanged (a ``str`` is
        text, never a file name)."""
        if isinstance(context, os.PathLike):
            return cls((os.fspath(context),))
        if isinstance(context, (list, tuple)) and context and all(isinstance(p, os.PathLike) for p in context):
            return cls(tuple(os.fspath(p) for p in context))
        return context


def context_value(context: Any) -> Any:
    """The context as a value: a :class:`TextFile`'s text, anything else as it is (for code that needs the str)."""
    return context.read() if isinstance(context, TextFile) else context


class ContextLoader(Protocol):
    """What a ``ContextLoaderSpec`` factory returns: ``load(path)`` → text, a JSON value or ``Documents`` (name the
    parts ``<file name>#<part>``, e.g. ``report.pdf#p12``); a file it cannot read raises ``InputError`` naming the
    file and what to do."""

    def load(self, path: Path) -> Any: ...


#: ``loader_for(path)``: the loader for that file, or None when none claims it.
LoaderLookup = Callable[[Path], Optional[ContextLoader]]


class TextLoader:
    """The built-in ``text`` loader: a file's text (UTF-8; undecodable bytes replaced)."""

    def __init__(self, settings: Any = None, services: Any = None) -> None:
        pass

    def load(self, path: Path) -> str:
        try:
            with open_regular(path) as handle:
                data = handle.read()
        except OSError as exc:
            raise InputError(f"cannot read context file {path}: {exc.strerror}") from None
        if b"\x00" in data[:BINARY_PROBE]:
            raise InputError(f"{path}: a binary file ({path.suffix or 'no suffix'}) that no context loader reads",
                             hint="install a plugin that registers a context loader for it (rlm plugins list "
                                  "shows the loaders installed), or pass a text export of it")
        # universal newlines, as text-mode reading gives them
        return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


class JsonLoader(TextLoader):
    """The built-in ``json`` loader: a ``.json`` file as the JSON value it holds."""

    def load(self, path: Path) -> Any:
        try:
            return json.loads(super().load(path))
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None


class JsonLinesLoader(TextLoader):
    """The built-in ``jsonl`` loader: a JSON Lines file (``.jsonl``, ``.ndjson``) as the list of values its lines
    hold (blank lines skipped)."""

    def load(self, path: Path) -> Any:
        values = []
        for number, line in enumerate(super().load(path).splitlines(), start=1):
            if not line.strip():
                continue
            try:
                values.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}: line {number} is not valid JSON (column {exc.colno}: {exc.msg})",
                                 hint="each line of a .jsonl file holds one JSON value") from None
        return values


def load_context(paths: list[str], stdin: Optional[IO[str]] = None, *, as_path: bool = False,
                 loader_for: Optional[LoaderLookup] = None, lazy_text: bool = False) -> Any:
    """The context for a run from ``--context`` arguments (None when there are none).

    ``as_path`` (for an environment whose spec says ``context_as_path``): the one file's resolved ``Path``,
    checked to exist but not read. ``loader_for`` picks each file's loader (default: the built-in text and JSON
    ones). ``lazy_text``: one large text file (``LAZY_BYTES``) read by the plain ``text`` loader stays on disk as
    a :class:`TextFile` (callers whose environments take it through a sandbox session: ``rlm run``, the API)."""
    if not paths:
        return None
    if as_path:
        if len(paths) != 1 or paths == ["-"] or Path(paths[0]).is_dir():
            raise InputError("this environment reads one context file itself", hint="pass exactly one --context FILE")
        return _existing(paths[0]).resolve()
    if paths == ["-"]:
        return (stdin or sys.stdin).read()
    if len(paths) == 1 and not Path(paths[0]).is_dir():
        path = _existing(paths[0])
        if lazy_text and _plain_text(path, loader_for):
            return TextFile(path)
        return load_file(path, loader_for)
    documents: list[Any] = []
    names: list[str] = []
    skipped: list[str] = []
    for raw in paths:
        path = _existing(raw)
        files = _files_under(path) if path.is_dir() else [path]
        for file in files:
            name = str(file.relative_to(path)) if path.is_dir() else str(file)
            try:
                loaded = load_file(file, loader_for)
            except InputError as exc:
                if not path.is_dir():
                    raise  # a file named on its own must load
                skipped.append(f"{name} ({exc.message})")
                continue
            if isinstance(loaded, Documents):  # a file of several documents (a PDF's pages): each its own
                documents.extend(loaded)
                names.extend(name + part[part.index("#"):] if "#" in part else f"{name}#{part}"
                             for part in loaded.names)
            else:
                documents.append(loaded)
                names.append(name)
    _warn_skipped("file(s) no context loader could read", skipped)
    if not documents:
        raise InputError(f"no readable text files under {', '.join(paths)}",
                         hint="rlm plugins list shows the context loaders installed")
    return Documents(documents, names)


def _plain_text(path: Path, loader_for: Optional[LoaderLookup]) -> bool:
    """Whether ``path`` is a large file the built-in ``text`` loader would read."""
    try:
        if path.stat().st_size < LAZY_BYTES:
            return False
        with open_regular(path) as handle:
            if b"\x00" in handle.read(BINARY_PROBE):  # a binary file: the text loader refuses it
                return False
    except OSError:
        return False  # the loader says what is wrong
    return type(_loader(path, loader_for)) is TextLoader


def _existing(raw: str) -> Path:
    path = Path(raw).expanduser()
    if not path.exists():
        raise InputError(f"context file not found: {raw}",
                         hint="pass a file, several files, a directory, or - for stdin")
    mode = path.stat().st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a FIFO or a device would block or never end
        raise InputError(f"context {raw} is not a regular file or a folder", hint="pass a file or a directory")
    return path


def _files_under(directory: Path) -> list[Path]:
    """The regular files under ``directory`` (hidden ones aside), never through a link that leads out of it, and
    never a FIFO, socket or device: those are skipped with one warning."""
    root = directory.resolve()
    files, refused = [], []
    for folder, subfolders, names in os.walk(directory):  # links to folders are not followed
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        for name in sorted(n for n in names if not n.startswith(".")):
            file = Path(folder) / name
            target = file.resolve()
            if not target.is_relative_to(root):
                refused.append(f"{file.relative_to(directory)} (a link out of the folder)")
            elif not target.is_file():
                refused.append(f"{file.relative_to(directory)} (not a regular file)")
            else:
                files.append(file)
    _warn_skipped(f"entr(ies) under {directory}", refused)
    return sorted(files)


def _warn_skipped(what: str, skipped: list[str]) -> None:
    """One warning naming the first ten of what was ``skipped`` (none when nothing was)."""
    if skipped:
        from rlm_host import logs

        logs.get_logger("rlm.context").warning(f"skipped {len(skipped)} {what}: " + "; ".join(skipped[:10])
                                               + ("; …" if len(skipped) > 10 else ""))


def open_regular(path: Path, *, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading only if it is a regular file: never blocks on a FIFO swapped in after a check
    (``O_NONBLOCK``), and the type is checked on the opened file itself; ``follow_links=False`` refuses a final
    symbolic link too (ELOOP)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, max_bytes: int, *, follow_links: bool = False) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes`` (``open_regular``: a FIFO or device
    never blocks, and by default a final symbolic link is refused). OSError otherwise: EFBIG when it is larger,
    so a small file someone else controls (a registry entry, an ``@FILE`` setting) can neither hang nor flood."""
    with open_regular(path, follow_links=follow_links) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than {max_bytes:,} bytes")
    return data


def write_atomic(path: Path, data: str | bytes, *, folder_no_link: bool = False) -> None:
    """Write ``data`` (text as UTF-8) as ``path``, readable by the user only: through a new temporary file in the
    same folder (``O_EXCL``, never a link), renamed over the name, so a crash leaves the old file or the new one,
    never half of one, and a link planted at the name is replaced, not followed. Every step goes through one
    descriptor of the folder; ``folder_no_link`` refuses a folder that is itself a link (a private registry),
    so a folder swapped for a link after a check is never written through."""
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | (nofollow if folder_no_link else 0))
    temporary = f".{path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600, dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.replace(temporary, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def load_file(path: Path, loader_for: Optional[LoaderLookup] = None) -> Any:
    """One context file through its loader (default: the built-in JSON, JSON Lines and text loaders)."""
    return _loader(path, loader_for).load(path)


def _loader(path: Path, loader_for: Optional[LoaderLookup]) -> ContextLoader:
    """The loader ``loader_for`` picks for ``path``, else the built-in one for its suffix."""
    loader = loader_for(path) if loader_for is not None else None
    suffix = path.suffix.lower()
    return loader if loader is not None else JsonLoader() if suffix == ".json" else \
        JsonLinesLoader() if suffix in (".jsonl", ".ndjson") else TextLoader()


def describe_context(context: Any, preview_chars: int = 200) -> dict[str, Any]:
    """Metadata about ``context`` for the prompt and the trajectory; never the content beyond a preview."""
    if context is None:
        return {"type": "none", "total_chars": 0}
    if isinstance(context, Path):  # a file the environment reads itself (``context_as_path``)
        return {"type": "path", "path": str(context), "total_chars": 0, "bytes": context.stat().st_size}
    if isinstance(context, str):
        return {"type": "str", "total_chars": len(context), "preview": redacted_head(context, preview_chars)}
    if isinstance(context, TextFile):  # what the sandbox will hold: a str
        return {"type": "str", "total_chars": context.chars,
                "preview": redacted_head(context.head(preview_chars + 512), preview_chars)}
    if isinstance(context, list):
        lengths = [len(doc) if isinstance(doc, str) else len(_compact_json(doc)) for doc in context]
        first = context[0] if context else ""
        preview = first if isinstance(first, str) else _compact_json(first)
        return {"type": "list", "documents": len(context), "total_chars": sum(lengths),
                "document_lengths": lengths[:MAX_LISTED], "preview": redacted_head(preview, preview_chars)}
    text = _compact_json(context)
    described: dict[str, Any] = {"type": type(context).__name__, "total_chars": len(text)}
    if isinstance(context, dict):
        described["keys"] = [str(k) for k in list(context)[:MAX_LISTED]]
        described["key_count"] = len(context)
    described["preview"] = redacted_head(text, preview_chars)
    return described


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError):
        return str(value)
