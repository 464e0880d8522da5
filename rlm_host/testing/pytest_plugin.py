"""The pytest plugin of ``rlm_host.testing`` (entry point ``pytest11: rlm``): fixtures for plugin tests.

Installed with rlm-host, so every plugin's tests get them without a ``conftest.py``:

- ``rlm_isolated``: a HOME, a working directory and a run home of the test's own (and a registry of live runs:
  ``$XDG_STATE_HOME`` and ``$XDG_CONFIG_HOME`` unset, so both are under that HOME), and no ``RLM_*`` variable
  from the developer's shell; returns an ``Isolated`` with ``home``, ``work`` and ``runs`` paths.
- ``rlm_cli``: runs ``rlm`` in-process, ``rlm_cli("plugins", "list", plugins="rlm-sandbox-mine")`` →
  ``CliResult(code, out, err)``; ``plugins`` is ``RLM_PLUGINS`` (which installed distributions load).
- ``rlm_plugin_host``: ``rlm_plugin_host("rlm-sandbox-mine")`` → a loaded ``PluginHost`` seeing the default
  plugins and only the named distributions (``modules=["my_hooks"]`` adds unpackaged hook modules).
- ``rlm_script``: ``rlm_script(["```repl\n…\n```", "FINAL(42)"])`` → ``"scripted:/…/script-1.json"``, a model
  answering from that script (for ``rlm_cli("run", …, "--model", model)``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

import pytest


@dataclass(frozen=True)
class Isolated:
    home: Path  # $HOME
    work: Path  # the working directory (where rlm.toml is looked for)
    runs: Path  # the run home (.rlm in the working directory)


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def rlm_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Isolated:
    """A HOME and working directory of the test's own, and no RLM_* variables from the developer's shell."""
    for name in list(os.environ):
        if name.startswith("RLM_"):
            monkeypatch.delenv(name)
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # the registry of live runs: this HOME's, not the user's
    monkeypatch.chdir(work)
    return Isolated(home=home, work=work, runs=work / ".rlm")


@pytest.fixture
def rlm_cli(rlm_isolated: Isolated, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., CliResult]]:
    """Run ``rlm`` in-process in an isolated home; ``plugins=`` selects distributions (default: none)."""
    from rlm_host.cli.main import main
    from rlm_host.plugins import reset_host

    def run(*args: str, plugins: Optional[str] = "") -> CliResult:
        if plugins is None:
            monkeypatch.delenv("RLM_PLUGINS", raising=False)
        else:
            monkeypatch.setenv("RLM_PLUGINS", plugins)
        reset_host()
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    yield run
    reset_host()


@pytest.fixture
def rlm_plugin_host() -> Callable[..., object]:
    """A loaded plugin host that sees the default plugins and only the named distributions."""
    from rlm_host.plugins.host import PluginHost

    def make(*distributions: str, modules: Sequence[str] = ()) -> PluginHost:
        """``modules``: unpackaged hook modules to load too (``RLM_PLUGIN_MODULES``), importable by name."""
        environ = {"RLM_PLUGINS": ",".join(distributions), "RLM_PLUGIN_MODULES": ",".join(modules)}
        return PluginHost(environ=environ).load()

    return make


@pytest.fixture
def rlm_script(rlm_isolated: Isolated) -> Callable[..., str]:
    """Write a script of model replies for the ``scripted`` provider; returns the model string to pass.

    ``rlm_script(["```repl\\nprint(len(context))\\n```", "FINAL(42)"], rules=[{"match": "Extract", "text": "7"}])``
    → ``"scripted:/…/work/script-1.json"``: replies in order, and ``rules`` answering any prompt that matches.
    """
    import json

    counter = iter(range(1, 1_000_000))

    def write(replies: Sequence[object] = (), *, rules: Sequence[dict] = (), context_window: int = 0) -> str:
        path = rlm_isolated.work / f"script-{next(counter)}.json"
        script: dict = {"responses": list(replies), "rules": list(rules)}
        if context_window:
            script["context_window"] = context_window  # a small window: what compaction is for
        path.write_text(json.dumps(script))
        return f"scripted:{path}"

    return write
