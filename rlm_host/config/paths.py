"""Where the user's own rlm files live: ``$XDG_CONFIG_HOME/rlm``, else ``~/.config/rlm`` (config, trust, key); and
``$XDG_STATE_HOME/rlm``, else ``~/.local/state/rlm`` (what outlives a command but is no setting: the live runs)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional


def user_config_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "rlm"


def user_state_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    """``$XDG_STATE_HOME/rlm`` (an absolute path; a relative one is ignored, as the XDG spec says), else
    ``~/.local/state/rlm``: one folder per user whatever folder a command runs in."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = str(Path(env.get("HOME", str(Path.home()))) / ".local" / "state")
    return Path(base) / "rlm"
