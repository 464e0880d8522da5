"""The host's own doctor checks (registered by ``rlm_host.default_plugins.builtin``); each receives the loaded
settings (None when the configuration did not load)."""

from __future__ import annotations

import sys
import tempfile
from typing import Any

from rlm_host.components import Readiness

MIN_PYTHON = (3, 11)


def python_version(loaded: Any = None) -> Readiness:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info[:2] < MIN_PYTHON:
        return Readiness(False, f"Python {version}", f"use Python {'.'.join(map(str, MIN_PYTHON))} or newer")
    return Readiness(True, f"Python {version} at {sys.executable}")


def config_valid(loaded: Any) -> Readiness:
    if loaded is None:
        return Readiness(False, "the configuration did not load (see the error above)", "fix the file or variable")
    files = ", ".join(str(p) for p in loaded.files) or "no config file; defaults and environment only"
    return Readiness(True, files)


def home_writable(loaded: Any) -> Readiness:
    if loaded is None:
        return Readiness(False, "cannot resolve the run directory: the configuration did not load")
    home = loaded.home
    probe_dir = next(folder for folder in [home, *home.absolute().parents] if folder.exists())  # "/" is one
    try:  # a file made and removed: what os.access cannot tell (a read-only mount, an ACL, root)
        with tempfile.NamedTemporaryFile(dir=probe_dir, prefix=".rlm-doctor-"):
            pass
    except OSError as exc:  # EACCES: "Permission denied"
        return Readiness(False, f"{probe_dir} is not writable: {exc.strerror}",
                         "set RLM_HOME or [paths] home to a writable folder")
    return Readiness(True, f"{home.resolve()}" + ("" if home.exists() else " (created on first run)"))
