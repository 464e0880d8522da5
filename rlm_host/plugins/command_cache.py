"""The sub-commands of a healthy installation, remembered between starts so ``rlm --help`` imports no plugin.

Listing ``rlm``'s commands asks every plugin's ``rlm_register_commands`` hook, which means importing pluggy, the
registration records and every plugin's hook module: 25 ms of the 0.12 s ``rlm --help`` took with 25 plugins. After
a listing made by a healthy load (no plugin broken, no name claimed twice, no ``RLM_PLUGIN_MODULES``), its
(name, help) pairs are written to ``<user cache folder>/rlm/commands-<id>.json`` beside what they came from:

- the interpreter, ``sys.path``, the working directory when ``sys.path`` names it relatively, and the variables
  that choose plugins (``RLM_PLUGINS``, ``RLM_STRICT_PLUGINS``);
- the modification time of every ``sys.path`` folder: installing, upgrading or removing a distribution adds or
  removes a folder in one of them, so a plugin installed a moment ago is listed by the next ``rlm``;
- size and modification time of each plugin's ``entry_points.txt`` and of every module file loaded from the
  plugins' packages (and the host's default plugins): editing a hook module of an editable install counts.

The listing is used only when all of that still holds; anything else — a missing, unreadable, foreign or malformed
file too — means the plugins load as without a cache, and the listing is written anew. Nothing but listing reads it:
running a command (its ``--help`` included) loads the plugins, warnings of broken ones and all. The file is the
user's own and is checked as if hostile (security rules: project and shared files may be): a regular file owned by
the user, mode 0600 in a folder made 0700, at most 1 MB, names and one-line printable help texts only, else refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import sys
from typing import Any, Optional

FORMAT = 1
_MAX_BYTES = 1 << 20
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")  # components._NAME_RE, bounded (not imported: it costs 7 ms)
_SELECTING = ("RLM_PLUGINS", "RLM_STRICT_PLUGINS")
#: A file changed after (or just before: file times lag the clock by a tick) the load began may have been read before
#: the change: nothing is written then, and the next start writes.
_SETTLE_NS = 100_000_000


def cache_dir() -> Optional[str]:
    """``$XDG_CACHE_HOME/rlm``, else ``~/.cache/rlm``; None when there is no home to find it in."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "rlm") if os.path.isabs(base) else None


def _setup() -> dict[str, Any]:
    """What the listing depends on besides file times; it also names the cache file."""
    relative = any(not os.path.isabs(entry or ".") for entry in sys.path)
    return {"format": FORMAT, "python": sys.executable, "version": sys.version, "path": list(sys.path),
            "cwd": os.getcwd() if relative else "", "env": [os.environ.get(name) for name in _SELECTING]}


def _path_times() -> list[Optional[int]]:
    """The modification time of every ``sys.path`` folder (None for one that is missing)."""
    return [_stamp(entry or ".")[1] for entry in sys.path]


def _stamp(path: str) -> list[Any]:
    try:
        found = os.stat(path)
    except OSError:
        return [path, None, None]
    return [path, found.st_mtime_ns, found.st_size]


def _file_name(setup: dict[str, Any]) -> str:
    import zlib  # a checksum is enough: the name only spreads configurations over files, the content is compared

    return f"commands-{zlib.crc32(json.dumps(setup, sort_keys=True).encode()):08x}.json"


def _may_read() -> bool:
    """Whether a cached listing may stand for this process's plugins: not with hook modules named by
    ``RLM_PLUGIN_MODULES`` (files of anyone's), nor once a plugin host exists (it may have been given another
    environment, and it knows better anyway)."""
    return not _local_modules() and getattr(sys.modules.get("rlm_host.plugins.host"), "_HOST", None) is None


def valid_listing(listing: Any) -> bool:
    return (isinstance(listing, dict) and len(listing) <= 1000
            and all(isinstance(name, str) and _NAME_RE.match(name) for name in listing)
            and all(isinstance(text, str) and len(text) <= 1000 and text.isprintable()
                    for text in listing.values()))


def read() -> Optional[dict[str, str]]:
    """The cached listing, command name → help, when it is still this installation's; else None."""
    directory = cache_dir()
    if directory is None or not _may_read():
        return None
    setup = _setup()
    try:
        data = _load(os.path.join(directory, _file_name(setup)))
        files = data["files"]
        if (data["setup"] != setup or data["path_times"] != _path_times()
                or not isinstance(files, list)
                or not all(isinstance(f, list) and f and isinstance(f[0], str) for f in files)
                or [_stamp(f[0]) for f in files] != files):
            return None
        listing = data["commands"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # a bad cache is no cache, never an error
        return None
    return listing if valid_listing(listing) else None


def _load(path: str) -> Any:
    """A JSON file that is the user's own and no one else's to write, else ValueError."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))  # a FIFO: no wait
    with os.fdopen(fd, "rb") as handle:
        found = os.fstat(handle.fileno())
        mine = not hasattr(os, "getuid") or found.st_uid == os.getuid()
        if not stat.S_ISREG(found.st_mode) or not mine or found.st_mode & 0o077 or found.st_size > _MAX_BYTES:
            raise ValueError(f"{path}: not a cache file of this user's")
        return json.loads(handle.read(_MAX_BYTES + 1))


def write(host: Any, listing: dict[str, str]) -> None:
    """Remember ``listing`` (made by ``host``, loaded from this process's environment) when the load was healthy
    and nothing it came from changed while it ran; never fails (a cache that cannot be written is no cache)."""
    directory = cache_dir()
    if directory is None or not _may_write(host) or not valid_listing(listing):
        return
    setup = _setup()
    path_times = _path_times()
    files = [_stamp(path) for path in _source_files(host)]
    times = [t for t in path_times if t is not None] + [f[1] for f in files if f[1] is not None]
    if any(t >= host.load_started_ns - _SETTLE_NS for t in times):
        return
    from pathlib import Path

    from rlm_host.context import write_atomic

    data = {"setup": setup, "path_times": path_times, "files": files, "commands": listing}
    with contextlib.suppress(OSError):
        os.makedirs(directory, mode=0o700, exist_ok=True)
        write_atomic(Path(directory, _file_name(setup)), json.dumps(data))


def _may_write(host: Any) -> bool:
    """A host whose load may be remembered: built from this process's environment, every plugin loaded cleanly."""
    return (not _local_modules() and getattr(host, "from_process_environment", False)
            and all(dist.status != "broken" for dist in host.distributions))


def _local_modules() -> bool:
    return bool(os.environ.get("RLM_PLUGIN_MODULES", "").strip())


def _source_files(host: Any) -> list[str]:
    """The files the listing came from: each plugin's ``entry_points.txt`` and the loaded modules of its packages
    (and of the host's default plugins)."""
    packages: set[str] = set()
    files: set[str] = set()
    for dist in host.distributions:
        if dist.metadata_folder:
            files.add(os.path.join(dist.metadata_folder, "entry_points.txt"))
        if not dist.builtin:
            packages.update(value.partition(":")[0].strip().split(".")[0] for _, value in dist.entry_points)
    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in packages or name.startswith("rlm_host.default_plugins"):
            source = getattr(module, "__file__", None)
            if isinstance(source, str):
                files.add(source)
    return sorted(files)
