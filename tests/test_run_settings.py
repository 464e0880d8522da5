"""A run started with settings of its own (``run_task(settings=…)``, what the front doors pass) uses them all the
way down: an environment it builds through ``ctx.build_environment`` gets the run's ``[environment.NAME]``, and
its sandbox the run's ``[sandbox.NAME]``, never the runner's."""

from __future__ import annotations

from rlm_host.config import load_settings
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost
from rlm_host.testing.engine import isolated_runner

SHOW = "```repl\nimport os\nFINAL(os.environ.get('RLM_MARK', 'unset'))\n```"


def run_nesting(runner, **settings):
    root = ScriptedConnector.from_responses([SHOW], name="scripted:root")
    result = runner.run_task("q", context="A PREVIEWED CONTEXT", environment="nesting",
                             connectors={"root": root, "sub": root}, **settings)
    assert result.completed, result.error
    return result.final_response, "".join(m["content"] for m in root.calls[0])


def test_a_nested_environment_and_its_sandbox_get_the_runs_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    host = PluginHost(environ={"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "support.nesting_environment"})
    runner = isolated_runner(tmp_path, sandbox="process", host=host)
    answer, prompt = run_nesting(runner)  # the runner's settings: the defaults
    assert answer == "unset" and "A PREVIEWED CONTEXT" in prompt
    theirs = load_settings(environ={"HOME": str(tmp_path), "RLM_RUN__SANDBOX": "process"}, cwd=tmp_path, host=host,
                           overrides={"environment.pure_rlm.preview_chars": (0, "test"),
                                      "sandbox.process.env": ({"RLM_MARK": "the run's"}, "test")})
    answer, prompt = run_nesting(runner, settings=theirs)
    assert answer == "the run's"
    assert "A PREVIEWED CONTEXT" not in prompt
