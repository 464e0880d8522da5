"""What the repository's tests share, importable as ``support`` (``tests`` is on pytest's ``pythonpath``: see the
root pyproject.toml): the repository's paths, the test-only plugin distributions, the installed ``rlm`` script and
``pip_install_target``; in the submodules, real components rather than mocks (``workers``, ``echo_framework``,
``browser``, ``doc_sessions``…).

Import these from here, never from ``conftest``: pytest imports each conftest.py under a name of its own
(``--import-mode=importlib``), so ``conftest`` is no module a test can import.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: The repository's root folder.
REPO = Path(__file__).resolve().parents[2]
#: The test-only plugin distributions (``tests/plugins/*``), pip-installed once per session by ``plugin_site``.
TEST_PLUGINS = sorted(p for p in (REPO / "tests" / "plugins").iterdir() if (p / "pyproject.toml").is_file())
#: The plugin template, copied by plugin authors (plugins/_template/README.md).
TEMPLATE = REPO / "plugins" / "_template"
GOOD = "rlm-test-good"
BROKEN_ALL = ["rlm-test-broken-import", "rlm-test-raising-hook", "rlm-test-clash", "rlm-test-misspelt"]

#: The installed console script: tests go through the same entry point a user types.
RLM_SCRIPT = str(Path(sys.executable).with_name("rlm"))

#: Modules of the heavy frameworks the host must never import just to start, list or show help.
HEAVY_MODULES = (
    "dspy",
    "google.adk",
    "pydantic_ai",
    "deepagents",
    "docker",
    "pydantic_monty",
    "litellm",
    "langchain_core",
    "openai",
    "httpx",
    "anthropic",
    "google.genai",
    "llama_cpp",
    "rlm_test_good.heavy",
    "rlm_host.testing",  # the test helpers for plugin authors, and pytest with them
    "pytest",
    "_pytest",
)


def pip_install_target(target: Path, *projects: Path) -> None:
    """Build and install ``projects`` into ``target`` with pip (no deps, no network for build deps)."""
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-deps", "--no-build-isolation", "--target", str(target), *map(str, projects),
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{result.stdout}\n{result.stderr}")
