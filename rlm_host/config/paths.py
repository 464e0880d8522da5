"""Where the user's own rlm files live: ``$XDG_CONFIG_HOME/rlm``, else ``~/.config/rlm`` (config, trust, key)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Optional


def user_config_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".config")
    return Path(base) / "rlm"
