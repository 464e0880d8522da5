"""Discovery and contained loading of real plugin distributions, found through their entry points."""

import json
import types

import pytest

from support import BROKEN_ALL, GOOD
from rlm_host import EnvironmentSpec, SinkSpec, hookimpl
from rlm_host.errors import ComponentClashError, PluginError
from rlm_host.plugins.discovery import PluginDistribution
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


def test_a_command_named_like_a_builtin_is_refused_naming_both(rlm):
    """Built-in sub-commands come through the same hook as plugins', so a clash is the same clear error."""
    result = rlm("config", "show", plugins=["rlm-test-clash"])
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "command 'config' is registered by both rlm-host and rlm-test-clash" in result.stderr
    listing = json.loads(rlm("plugins", "list", "--all", "--json", plugins=["rlm-test-clash"]).stdout)
    entries = {entry["name"]: entry for entry in listing}
    assert entries["rlm-host"]["status"] == "ok"  # a plugin's clash does not break the host
    assert any("command 'config'" in error for error in entries["rlm-test-clash"]["errors"])
    assert rlm("--help", plugins=["rlm-test-clash"]).returncode == 0


def _inline_host(module: object) -> PluginHost:
    """The default plugins plus ``module`` registered as if a distribution's hook module."""
    host = PluginHost(environ={"RLM_PLUGINS": ""}).load()
    inline = PluginDistribution("rlm-test-inline", "0.0.1", status="ok")
    host.distributions.append(inline)
    host._register(inline, "rlm-test-inline:hooks", module)
    return host


def test_tryfirst_and_trylast_order_the_records():
    @hookimpl(tryfirst=True)
    def rlm_register_sinks():
        return [SinkSpec("first-sink", "Registered before the built-ins", "builtins:dict")]

    @hookimpl(trylast=True)
    def rlm_register_environments():
        return [EnvironmentSpec("last-env", "Registered after everything", "builtins:dict")]

    host = _inline_host(types.SimpleNamespace(rlm_register_sinks=rlm_register_sinks,
                                              rlm_register_environments=rlm_register_environments))
    assert host.sinks().names()[0] == "first-sink"
    assert host.environments().names()[-1] == "last-env"


def test_wrapper_hookimpls_are_refused_not_silently_ignored():
    @hookimpl(wrapper=True)
    def rlm_register_sinks():
        return (yield)  # noqa: B901 - pluggy's new-style wrapper, the case under test

    host = _inline_host(types.SimpleNamespace(rlm_register_sinks=rlm_register_sinks))
    inline = next(d for d in host.distributions if d.name == "rlm-test-inline")
    assert inline.status == "broken"
    assert inline.errors == ["rlm_register_sinks: @hookimpl(wrapper=True) is not supported by registration hooks"]
    assert "pure_rlm" in host.environments()  # the host's own records still register


def test_an_unpackaged_hook_module_loads_from_rlm_plugin_modules(tmp_path, monkeypatch, rlm):
    """A plugin being written can be tried without packaging it: RLM_PLUGIN_MODULES names its hook module."""
    (tmp_path / "my_sink_hooks.py").write_text(
        "from rlm_host import SinkSpec, hookimpl\n\n"
        "@hookimpl\ndef rlm_register_sinks():\n"
        "    return [SinkSpec('my-sink', 'A sink tried before packaging', 'builtins:dict')]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    host = PluginHost(environ={"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "my_sink_hooks, missing_module"}).collect_all()
    assert host.sinks().get("my-sink").description == "A sink tried before packaging"
    assert dist(host, "local:my_sink_hooks").status == "ok"
    assert dist(host, "local:missing_module").status == "broken"
    listing = rlm("plugins", "list", "--json", plugins=[],
                  env={"RLM_PLUGIN_MODULES": "my_sink_hooks", "PYTHONPATH": str(tmp_path)})
    entry = next(e for e in json.loads(listing.stdout) if e["name"] == "local:my_sink_hooks")
    assert entry["status"] == "ok" and entry["provides"] == {"sink": ["my-sink"]}
