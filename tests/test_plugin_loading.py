"""Discovery and contained loading of real plugin distributions, found through their entry points."""

import pytest

from conftest import BROKEN_ALL, GOOD
from rlm_host.errors import ComponentClashError, PluginError
from rlm_host.plugins.host import PluginHost

pytestmark = pytest.mark.usefixtures("use_plugin_site")


def host_with(*names: str) -> PluginHost:
    return PluginHost(environ={"RLM_PLUGINS": ",".join(names)}).collect_all()


def dist(host: PluginHost, name: str):
    return next(d for d in host.distributions if d.name == name)


def test_good_plugin_registers_one_component_of_every_kind():
    host = host_with(GOOD)
    good = dist(host, GOOD)
    assert good.status == "ok" and good.errors == []
    assert good.version == "0.0.1"
    assert good.provides == {
        "environment": ["echo-env"],
        "framework": ["test-framework"],
        "sandbox": ["test-box"],
        "sink": ["test-sink"],
        "benchmark": ["test-pack"],
        "provider": ["test-llm"],
        "command": ["hello-test"],
        "check": ["good-check"],
    }
    assert host.environments().get("echo").name == "echo-env"  # alias
    assert host.providers().get("test-llm").key_env == ("TEST_LLM_KEY",)
    assert host.sandboxes().get("test-box").security_boundary is True


def test_builtins_register_through_the_same_hooks_and_survive_an_empty_selection():
    host = PluginHost(environ={"RLM_PLUGINS": ""}).collect_all()
    builtin = dist(host, "rlm-host")
    assert builtin.builtin and builtin.status == "ok"
    assert set(host.doctor_checks().names()) >= {"python", "config", "home"}
    assert all(d.status == "disabled" for d in host.distributions if not d.builtin)


def test_selection_loads_only_named_distributions(capsys):
    host = host_with(GOOD, "rlm-not-installed-anywhere")
    statuses = {d.name: d.status for d in host.distributions}
    assert statuses[GOOD] == "ok"
    assert all(statuses[name] == "disabled" for name in BROKEN_ALL)
    warning = capsys.readouterr().err
    assert "RLM_PLUGINS names a distribution that is not installed" in warning
    assert "rlm-not-installed-anywhere" in warning


def test_selection_names_are_normalised():
    host = PluginHost(environ={"RLM_PLUGINS": "RLM_Test.Good"}).collect_all()
    assert dist(host, GOOD).status == "ok"


def test_plugin_failing_at_import_is_contained():
    host = host_with(GOOD, "rlm-test-broken-import")
    broken = dist(host, "rlm-test-broken-import")
    assert broken.status == "broken"
    assert "ImportError: libfoo.so.1" in broken.errors[0]
    assert dist(host, GOOD).status == "ok"
    assert host.environments().get("echo-env")


def test_raising_hook_loses_only_that_hooks_components():
    host = host_with("rlm-test-raising-hook")
    raiser = dist(host, "rlm-test-raising-hook")
    assert raiser.status == "broken"
    assert raiser.errors == ["rlm_register_sandboxes() raised RuntimeError: sandbox registry exploded"]
    assert host.environments().get("raiser-env")  # its other hook still registered
    assert "raiser" not in " ".join(host.sandboxes().names())


def test_misspelt_hook_fails_loudly_with_a_suggestion():
    host = host_with("rlm-test-misspelt")
    error = dist(host, "rlm-test-misspelt").errors[0]
    assert error == "implements unknown hook 'rlm_register_enviroments' (did you mean 'rlm_register_environments'?)"
    assert "never-seen" not in host.environments()


def test_name_clash_is_one_error_naming_both_distributions():
    host = host_with(GOOD, "rlm-test-clash")
    message = "environment 'echo-env' is registered by both rlm-test-clash and rlm-test-good"
    assert message in dist(host, GOOD).errors
    assert message in dist(host, "rlm-test-clash").errors
    with pytest.raises(ComponentClashError, match="rlm-test-clash and rlm-test-good"):
        host.environments().get("echo-env")
    assert host.sinks().get("clash-sink")  # the clashing plugin's other components still work
    assert host.sandboxes().get("test-box")


@pytest.mark.parametrize(
    "name, error",
    [
        ("rlm-test-broken-import", "ImportError"),
        ("rlm-test-misspelt", "unknown hook"),
        ("rlm-test-raising-hook", "sandbox registry exploded"),
    ],
)
def test_strict_mode_turns_a_broken_plugin_into_an_error(name, error):
    host = PluginHost(environ={"RLM_PLUGINS": name, "RLM_STRICT_PLUGINS": "1"})
    with pytest.raises(PluginError, match=error):
        host.collect_all()


def test_every_broken_kind_at_once_leaves_the_good_plugin_usable():
    host = PluginHost(environ={}).collect_all()
    assert {d.name for d in host.broken()} >= set(BROKEN_ALL)
    assert host.frameworks().get("test-framework").load().__name__ == "Echo"
