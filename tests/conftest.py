"""Shared fixtures: real test-only plugin distributions installed through pip, and ways to run ``rlm``.

The test distributions under ``tests/plugins/`` are installed once per session with pip into a private
``--target`` directory, so they are found through real entry points without touching the environment the
user runs ``rlm`` in. Subprocess runs put that directory on PYTHONPATH; in-process runs prepend it to sys.path.
What tests import (the repository's paths, ``RLM_SCRIPT``, ``pip_install_target``…) is in ``support``
(tests/support/__init__.py): a conftest.py is not a module to import from.
"""

from __future__ import annotations

import importlib
import os
import subprocess
from pathlib import Path

import pytest

from rlm_host.plugins import reset_host
from support import RLM_SCRIPT, TEMPLATE, TEST_PLUGINS, pip_install_target


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
