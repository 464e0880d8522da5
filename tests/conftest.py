"""Shared fixtures: real test-only plugin distributions installed through pip, and ways to run ``rlm``.

The test distributions under ``tests/plugins/`` are installed once per session with pip into a private
``--target`` directory, so they are found through real entry points without touching the environment the
user runs ``rlm`` in. Subprocess runs put that directory on PYTHONPATH; in-process runs prepend it to sys.path.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlm_host.plugins import reset_host

REPO = Path(__file__).resolve().parent.parent
TEST_PLUGINS = sorted(p for p in (REPO / "tests" / "plugins").iterdir() if (p / "pyproject.toml").is_file())
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
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{result.stdout}\n{result.stderr}")


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding every test-only plugin distribution and the plugin template, pip-installed."""
    target = tmp_path_factory.mktemp("plugin-site")
    pip_install_target(target, *TEST_PLUGINS, TEMPLATE)
    return target


@pytest.fixture(autouse=True)
def _private_run_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test has a registry of live runs of its own (``$XDG_STATE_HOME/rlm/active``): a test's runs never
    show in the developer's ``rlm runs active``, and a test's ``rlm runs cancel --all`` stops no other run."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(autouse=True)
def _fresh_host():
    """Each test starts with no cached plugin host."""
    reset_host()
    yield
    reset_host()


@pytest.fixture
def use_plugin_site(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the test distributions visible to in-process discovery."""
    monkeypatch.syspath_prepend(str(plugin_site))
    importlib.invalidate_caches()
    return plugin_site


@pytest.fixture
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A working directory and HOME of its own, and no RLM_* variables from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("RLM_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.chdir(work)
    return {"HOME": str(home), "WORK": str(work)}


@pytest.fixture
def rlm(plugin_site: Path, isolated_env: dict[str, str]):
    """Run the installed ``rlm`` console script in a subprocess, with the test plugins visible.

    ``plugins`` selects distributions through RLM_PLUGINS (None: all installed).
    """

    def run(*args: str, plugins: list[str] | None = None, env: dict[str, str] | None = None, **kw):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
        full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(plugin_site), os.environ.get("PYTHONPATH")]))
        if plugins is not None:
            full_env["RLM_PLUGINS"] = ",".join(plugins)
        full_env.update(env or {})
        return subprocess.run(
            [RLM_SCRIPT, *args],
            capture_output=True,
            text=True,
            env=full_env,
            cwd=isolated_env["WORK"],
            timeout=60,
            **kw,
        )

    return run


@pytest.fixture
def cli(isolated_env, monkeypatch, capsys):
    """Run ``rlm`` in-process (built-ins only, isolated home and cwd); returns (exit code, stdout, stderr)."""
    from rlm_host.cli.main import main

    monkeypatch.setenv("RLM_PLUGINS", "")

    def run(*args: str):
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
