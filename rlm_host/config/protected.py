"""The folders the model is never given by default — the user's home, desktop, documents and downloads folders,
the filesystem root and the system's own folders — and the one guard that refuses them (``--allow-any-workdir``
lets one through): for a project folder, a ``--context`` folder, and any folder a component opens files in for
the model."""

from __future__ import annotations

from pathlib import Path

from rlm_host.errors import ConfigError


def protected_folders() -> set[Path]:
    """Folders an environment that edits files never works in by default: the user's home and its desktop,
    documents and downloads folders, the filesystem root and the system's own folders."""
    home = Path.home().resolve()
    system = ("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root", "/sbin", "/sys", "/usr",
              "/var", "/System", "/Library", "/Applications", "/Users", "/home", "/private", "/tmp")
    folders = {home, *(home / name for name in ("Desktop", "Documents", "Downloads"))}
    return {p.resolve() if p.exists() else p for p in folders | {Path(s) for s in system}}


def guard_folder(folder: Path, allow_any: bool = False, doing: str = "work with the files of") -> Path:
    """``folder`` resolved, or a ConfigError when it is a home, desktop, documents, downloads or system folder and
    ``allow_any`` (``--allow-any-workdir``) is not set: the guard of every component that reads or writes a folder
    of the host for the model (a project folder, a file tool's root, where a trace environment opens files)."""
    resolved = Path(folder).expanduser().resolve()
    if not allow_any and resolved in protected_folders():
        raise ConfigError(f"refusing to let the model {doing} {resolved}: a home, documents or system folder",
                          hint="run from a project folder, pass --workdir DIR, or --allow-any-workdir if you mean it")
    return resolved
