"""Helpers shared by the benchmark tests: an in-process RLMRunner, scripted-model files, repl replies."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rlm_host.testing import isolated_runner

DATA = Path(__file__).resolve().parent
#: This plugin's distribution name (what RLM_PLUGINS selects), with rlm-env-generic: generic_smoke and
#: paradigm_comparison run the generic environment.
BENCH = "rlm-bench,rlm-env-generic"
#: The installed console script: subprocess tests go through the same entry point a user types.
RLM_SCRIPT = str(Path(sys.executable).with_name("rlm"))


def make_runner(tmp_path: Path) -> Any:
    """An RLMRunner over the built-in components and this plugin's presets, home in ``tmp_path/.rlm``."""
    return isolated_runner(tmp_path, plugins=BENCH)


def write_script(path: Path, rules: list[dict[str, Any]], responses: list[Any] | None = None, **extra: Any) -> Path:
    path.write_text(json.dumps({"responses": responses or [], "rules": rules, **extra}))
    return path


def repl(code: str) -> str:
    """A pure_rlm reply running ``code``."""
    return f"```repl\n{code}\n```"


#: A scripted model answering the pure_rlm_smoke preset correctly (by real code over each case's context).
SMOKE_RULES = [
    {"match": "How many characters", "text": repl("FINAL(len(context))")},
    {"match": "first word", "text": repl("FINAL(context.split()[0])")},
    {"match": "lantern", "text": repl("import re\nFINAL(len(re.findall(r'\\blantern\\b', context, re.I)))")},
]
