"""Registration records: validation of what plugins hand in, lazy resolution, readiness without imports."""

import sys

import pytest

from rlm_host import EnvironmentSpec, ProviderSpec, Readiness, SandboxSpec
from rlm_host.components import normalize_name, resolve
from rlm_host.errors import PluginError


def test_record_rejects_bad_names_and_descriptions():
    with pytest.raises(PluginError, match="not valid"):
        EnvironmentSpec("Bad Name", "x", "builtins:dict")
    with pytest.raises(PluginError, match="not valid"):
        EnvironmentSpec("ok", "x", "builtins:dict", aliases=("also bad",))
    with pytest.raises(PluginError, match="one non-empty line"):
        EnvironmentSpec("ok", "two\nlines", "builtins:dict")


def test_names_compare_case_and_dash_insensitively():
    assert normalize_name("Pure-RLM") == normalize_name("pure_rlm")


def test_resolve_imports_lazily_and_reports_bad_paths():
    assert resolve("collections:OrderedDict").__name__ == "OrderedDict"
    assert resolve(dict) is dict  # an object given directly is used as is
    with pytest.raises(PluginError, match="expected 'package.module:attribute'"):
        resolve("collections.OrderedDict")
    with pytest.raises(PluginError, match="cannot import 'no_such_module_xyz'"):
        resolve("no_such_module_xyz:thing")
    with pytest.raises(PluginError, match="has no attribute 'Nope'"):
        resolve("collections:Nope")


def test_load_imports_the_factory_only_when_asked(tmp_path, monkeypatch):
    (tmp_path / "rlm_lazy_probe.py").write_text("class Runtime:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = SandboxSpec("lazy", "lazy record", "rlm_lazy_probe:Runtime")
    assert spec.readiness().ok
    assert "rlm_lazy_probe" not in sys.modules
    assert spec.load().__name__ == "Runtime"
    assert "rlm_lazy_probe" in sys.modules
    monkeypatch.delitem(sys.modules, "rlm_lazy_probe")


def test_readiness_finds_missing_requirements_without_importing():
    spec = ProviderSpec(
        "needs-pkg",
        "needs a package",
        "missing_pkg_for_rlm_tests:Client",
        requires=("json", "missing_pkg_for_rlm_tests"),
        install_hint="pip install missing-pkg",
    )
    state = spec.readiness()
    assert not state.ok
    assert "missing_pkg_for_rlm_tests" in state.detail and "json" not in state.detail
    assert state.hint == "pip install missing-pkg"


def test_readiness_uses_custom_check_and_contains_its_failures():
    ok = EnvironmentSpec("a", "a", "builtins:dict", check=lambda settings: Readiness(True, "fine"))
    assert ok.readiness() == Readiness(True, "fine")

    def explode(settings):
        raise OSError("socket gone")

    bad = EnvironmentSpec("b", "b", "builtins:dict", check=explode, install_hint="start the engine")
    state = bad.readiness()
    assert not state.ok and "socket gone" in state.detail and state.hint == "start the engine"

    wrong = EnvironmentSpec("c", "c", "builtins:dict", check=lambda settings: True)
    assert "not Readiness" in wrong.readiness().detail


def test_failed_custom_check_falls_back_to_install_hint():
    spec = EnvironmentSpec("d", "d", "builtins:dict", check=lambda settings: Readiness(False, "no"),
                           install_hint="do this")
    assert spec.readiness() == Readiness(False, "no", "do this")
