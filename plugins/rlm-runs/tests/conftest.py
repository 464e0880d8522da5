"""Fixtures of rlm-runs' tests: ``rlm_cli`` with this plugin loaded, so ``rlm runs``, ``rlm replay`` and the
``replay`` provider are there; and a registry of live runs of each test's own."""

from __future__ import annotations

from typing import Callable, Optional

import pytest

PLUGIN = "rlm-runs"


@pytest.fixture(autouse=True)
def _private_run_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs a test starts never show in the developer's ``rlm runs active`` (``$XDG_STATE_HOME/rlm/active``)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def rlm_cli(rlm_cli: Callable[..., object]) -> Callable[..., object]:
    """``rlm_host.testing``'s ``rlm_cli`` with rlm-runs loaded: ``plugins=`` names the other distributions to load
    (None: every installed one)."""

    def run(*args: str, plugins: Optional[str] = "") -> object:
        return rlm_cli(*args, plugins=None if plugins is None else ",".join(filter(None, [PLUGIN, plugins])))

    return run
