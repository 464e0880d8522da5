"""A virtual environment of a benchmark's own, for packages compared against ours that the project must not
depend on (another PDF library, the official ``rlms`` package): created once under ``~/.cache/rlm-benchmarks``,
reused afterwards, never touching the project's environment.

    python = benchmark_python("pdf-candidates", ["pypdf"])
    subprocess.run([str(python), "-c", "import pypdf"])
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(os.environ.get("RLM_BENCHMARK_ENVS", Path.home() / ".cache" / "rlm-benchmarks"))


def benchmark_python(name: str, requirements: list[str]) -> Path:
    """The interpreter of the environment ``name`` holding ``requirements`` (pip requirement strings)."""
    folder = ROOT / name
    python = folder / "bin" / "python"
    marker = folder / "requirements.txt"
    wanted = "\n".join(sorted(requirements))
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                   check=True)
    marker.write_text(wanted)
    return python
