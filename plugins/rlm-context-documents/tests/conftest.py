"""Every test of this plugin keeps the per-user key (which signs cache entries) in a temporary folder."""

import pytest


@pytest.fixture(autouse=True)
def _own_config(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg") / "config"))
