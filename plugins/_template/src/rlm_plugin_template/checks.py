"""The plugin's doctor check: it receives the loaded settings (None when they did not load) and never raises."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rlm_host import Readiness

from rlm_plugin_template.sink import output_path


def output_writable(loaded: Any) -> Readiness:
    if loaded is None:
        return Readiness(False, "the configuration did not load", "see `rlm config show`")
    path = output_path(loaded.component("sink", "plugin-template-csv"), loaded.home)
    folder = next((p for p in [path.parent, *path.parent.absolute().parents] if p.exists()), Path.cwd())
    if not os.access(folder, os.W_OK):
        return Readiness(False, f"{folder} is not writable", "set [sink.plugin-template-csv] path to a writable file")
    return Readiness(True, f"rows go to {path}")
