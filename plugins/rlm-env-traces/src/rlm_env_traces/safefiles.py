"""Writing files where links or other users could interfere: the index's atomic write and the export folder.

Every file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` relative to a folder descriptor, so a link planted at its
name is never followed and an existing file (an input named ``traces.jsonl``) is never truncated; folders are
walked one component at a time with ``O_NOFOLLOW``, so a link swapped in along the way is refused.
"""

from __future__ import annotations

import os
import secrets
from contextlib import suppress
from pathlib import Path
from typing import IO

from rlm_host import InputError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def private_folder(fd: int) -> bool:
    """Whether only this user can add or replace entries in the folder: ours, not world-writable, and
    group-writable only for our own primary group."""
    found = os.fstat(fd)
    if found.st_uid != os.getuid() or found.st_mode & 0o002:
        return False
    return not found.st_mode & 0o020 or found.st_gid == os.getgid()


def replace_file(folder: Path, name: str, data: bytes) -> Path:
    """Write ``folder/name`` atomically: a temporary file of a random name made with ``O_EXCL`` (mode 0600) in
    the folder, then renamed over ``name`` (a link planted at ``name`` is replaced, never followed). OSError when
    the folder is not one only this user can write."""
    folder_fd = os.open(folder, _DIR_FLAGS)
    try:
        if not private_folder(folder_fd):
            raise PermissionError(f"{folder} is writable by other users")
        temporary = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(temporary, _NEW_FILE_FLAGS, 0o600, dir_fd=folder_fd)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(temporary, dir_fd=folder_fd)
            raise
    finally:
        os.close(folder_fd)
    return folder / name


def make_private_dirs(folder: Path) -> None:
    """``mkdir -p`` with mode 0700 for what it creates (the user's cache folder)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)


def open_new_folder(path: Path) -> int:
    """A descriptor of the folder ``path``, made now or existing and empty; InputError otherwise. The parent is
    resolved first (a user's own links there are honoured), then every component is opened from ``/`` with
    ``O_NOFOLLOW``: a link planted at the folder itself, or swapped in later, is refused."""
    path = path.parent.resolve() / path.name if path.name not in ("", ".", "..") else path.resolve()
    fd = os.open("/", _DIR_FLAGS)
    try:
        made = False
        for part in path.parts[1:]:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)  # mkdir never follows a link at its own name
                made = True
            except FileExistsError:
                made = False
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise InputError(f"cannot export into {path}: {part!r} is a link or not a folder "
                                 f"({exc.strerror or exc})") from None
            os.close(fd)
            fd = inner
        if not made and os.listdir(fd):
            raise InputError(f"export folder {path} already exists and is not empty",
                             hint="name a new folder: an export never writes beside other files")
        return fd
    except BaseException:
        os.close(fd)
        raise


def create_file(folder_fd: int, name: str) -> IO[str]:
    """A new text file ``name`` in the folder, opened ``O_EXCL|O_NOFOLLOW`` (never an existing file or a link)."""
    if not name or "/" in name or name in (".", ".."):
        raise InputError(f"not a file name: {name!r}")
    try:
        fd = os.open(name, _NEW_FILE_FLAGS, 0o644, dir_fd=folder_fd)
    except OSError as exc:
        raise InputError(f"cannot create {name}: {exc.strerror or exc}") from None
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")
