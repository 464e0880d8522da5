"""The host's own doctor checks (registered in ``rlm_host.builtin``)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rlm_host.components import Readiness
from rlm_host.errors import RlmError

MIN_PYTHON = (3, 11)


def python_version() -> Readiness:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] < MIN_PYTHON:
        return Readiness(False, f"Python {version}", f"use Python {'.'.join(map(str, MIN_PYTHON))} or newer")
    return Readiness(True, f"Python {version} at {sys.executable}")


def config_valid() -> Readiness:
    from rlm_host.config import load_settings
    from rlm_host.plugins import get_host

    try:
        loaded = load_settings(host=get_host())
    except RlmError as exc:
        return Readiness(False, str(exc), exc.hint or "fix the file or variable named above")
    files = ", ".join(str(p) for p in loaded.files) or "no config file; defaults and environment only"
    return Readiness(True, files)


def home_writable() -> Readiness:
    from rlm_host.config import load_settings

    try:
        home = Path(load_settings().settings.paths.home).expanduser()
    except RlmError as exc:
        return Readiness(False, f"cannot resolve the run directory: {exc}")
    probe_dir = home if home.exists() else _nearest_existing_parent(home)
    if not os.access(probe_dir, os.W_OK):
        return Readiness(False, f"{probe_dir} is not writable", "set RLM_HOME or [paths] home to a writable folder")
    try:
        with tempfile.NamedTemporaryFile(dir=probe_dir, prefix=".rlm-doctor-"):
            pass
    except OSError as exc:
        return Readiness(False, f"{probe_dir}: {exc.strerror}", "set RLM_HOME to a writable folder")
    return Readiness(True, f"{home.resolve()}" + ("" if home.exists() else " (created on first run)"))


def _nearest_existing_parent(path: Path) -> Path:
    for parent in [path, *path.absolute().parents]:
        if parent.exists():
            return parent
    return Path.cwd()
