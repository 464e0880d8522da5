"""Tests of the plugin through the host, as a user would meet it (run after `pip install -e .`)."""

import json

from rlm_host.cli.main import main
from rlm_host.plugins.host import PluginHost


def test_registers_through_entry_point():
    host = PluginHost(environ={"RLM_PLUGINS": "rlm-plugin-template"}).collect_all()
    dist = next(d for d in host.distributions if d.name == "rlm-plugin-template")
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"command": ["plugin-template"], "check": ["plugin-template-host"]}


def test_doctor_check_passes():
    host = PluginHost(environ={"RLM_PLUGINS": "rlm-plugin-template"})
    assert host.doctor_checks().get("plugin-template-host").readiness().ok


def test_command_runs(capsys, monkeypatch):
    monkeypatch.setenv("RLM_PLUGINS", "rlm-plugin-template")
    from rlm_host.plugins import reset_host

    reset_host()
    assert main(["plugin-template", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["plugin"] == "rlm-plugin-template"
