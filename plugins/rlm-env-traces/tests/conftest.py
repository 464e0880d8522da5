"""Every test of this plugin keeps the per-user key and the cache folder in its own temporary folders."""

import pytest


@pytest.fixture(autouse=True)
def _own_config_and_cache(tmp_path_factory, monkeypatch):
    base = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(base / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(base / "cache"))
