"""A misspelt hook marks its plugin broken but leaves the plugin's working hooks in place (README: "its own hooks
that did succeed"), for a packaged plugin and for a local module from RLM_PLUGIN_MODULES alike."""

import json
from pathlib import Path

import pytest

from rlm_host.plugins.host import PluginHost

HOOKS = '''
from rlm_host import SinkSpec, hookimpl

class Acme:
    def __init__(self, settings, services):
        self.events = 0
    def handle(self, event):
        self.events += 1
    def close(self):
        pass

@hookimpl
def rlm_register_sink():  # misspelt
    return []

@hookimpl
def rlm_register_sinks():
    return [SinkSpec("acme", "Acme sink", "my_hooks:Acme")]
'''


@pytest.fixture
def my_hooks(tmp_path, monkeypatch):
    (tmp_path / "my_hooks.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    return {"RLM_PLUGIN_MODULES": "my_hooks", "PYTHONPATH": str(tmp_path)}


@pytest.mark.usefixtures("use_plugin_site")
def test_a_packaged_plugin_keeps_its_correct_hook_beside_a_misspelt_one():
    host = PluginHost(environ={"RLM_PLUGINS": "rlm-test-misspelt"}).collect_all()
    dist = next(d for d in host.distributions if d.name == "rlm-test-misspelt")
    assert dist.status == "broken" and "did you mean 'rlm_register_environments'" in dist.errors[0]
    assert host.sinks().get("misspelt-sink").description.startswith("Registered by a plugin")
    assert dist.provides == {"sink": ["misspelt-sink"]}


def test_a_local_module_with_a_misspelt_hook_still_feeds_its_sink(rlm, my_hooks, isolated_env):
    listing = rlm("plugins", "list", "--json", plugins=[], env=my_hooks)
    entry = next(e for e in json.loads(listing.stdout) if e["name"] == "local:my_hooks")
    assert entry["status"] == "broken" and entry["provides"] == {"sink": ["acme"]}
    assert "'rlm_register_sink' (did you mean 'rlm_register_sinks'?)" in entry["errors"][0]
    script = Path(isolated_env["WORK"]) / "script.json"
    script.write_text(json.dumps({"responses": ["FINAL(42)"]}))
    model = f"scripted:{script}"
    run = rlm("run", "q", "--model", model, "--sandbox", "process", "--sink", "acme", "-q", plugins=[], env=my_hooks)
    assert run.returncode == 0 and run.stdout.startswith("42"), run.stderr
    assert "unknown sink" not in run.stderr


def test_the_doctor_hint_for_a_local_module_is_an_action_not_a_pip_command(rlm, my_hooks):
    doctor = rlm("plugins", "doctor", plugins=[], env=my_hooks)
    assert doctor.returncode == 1  # a broken plugin is a problem
    lines = doctor.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL plugin") and "local:my_hooks" in line)
    hint = lines[at + 1]
    assert "pip install" not in hint and "my_hooks.py" in hint and "RLM_PLUGIN_MODULES" in hint
    checks = json.loads(rlm("plugins", "doctor", "--json", plugins=[], env=my_hooks).stdout)["checks"]
    hint = next(c["hint"] for c in checks if c["name"] == "local:my_hooks")
    assert "rename" in hint and "rlm_register_sinks" in hint
