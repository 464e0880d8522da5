"""Fixtures of the benchmark tests, on top of the ``rlm_host.testing`` pytest plugin's ``rlm_cli`` and
``rlm_isolated``: ``rlm`` runs in-process with this distribution (and only it) loaded.

Test modules import them by name (``from bench_data.fixtures import cli, work``): a ``conftest.py`` here would
be a second module named ``conftest`` beside the host's, which plain ``from conftest import …`` could then
resolve to the wrong one when the whole repository's tests run together."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from bench_data import BENCH


@pytest.fixture
def isolated_env(rlm_isolated) -> dict[str, str]:
    """The isolated HOME and working directory, as paths in a dict."""
    return {"HOME": str(rlm_isolated.home), "WORK": str(rlm_isolated.work)}


@pytest.fixture
def work(rlm_isolated) -> Path:
    return rlm_isolated.work


@pytest.fixture
def cli(rlm_cli) -> Callable[..., tuple[int, str, str]]:
    """``cli("bench", "list")`` → (exit code, stdout, stderr); ``plugins=`` names more distributions to load."""

    def run(*args: str, plugins: str = "") -> tuple[int, str, str]:
        result = rlm_cli(*args, plugins=",".join(filter(None, [BENCH, plugins])))
        return result.code, result.out, result.err

    return run
