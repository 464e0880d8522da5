"""The ``rlm`` command as a user runs it: the installed console script in a subprocess."""

import json
import re
import sys

from support import BROKEN_ALL, GOOD, HEAVY_MODULES


def test_version_lists_host_and_every_plugin_without_importing_them(rlm, tmp_path):
    marker = tmp_path / "heavy-imported"
    result = rlm("--version", env={"RLM_TEST_HEAVY_MARKER": str(marker)})
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("rlm-host ")
    assert f"  {GOOD} 0.0.1" in lines
    assert "  rlm-test-broken-import 0.0.1" in lines  # listed from metadata: never imported, so no error
    assert result.stderr == ""
    assert not marker.exists()


def test_plugins_list_json_shows_status_and_components(rlm):
    result = rlm("plugins", "list", "--json")
    assert result.returncode == 0
    entries = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert "rlm-host" not in entries
    assert entries[GOOD]["status"] == "broken"  # the clash plugin claims its environment name
    assert entries[GOOD]["provides"]["sandbox"] == ["test-box"]
    assert entries["rlm-plugin-template"]["status"] == "ok"
    for name in BROKEN_ALL:
        assert entries[name]["status"] == "broken" and entries[name]["errors"], name


def test_plugins_list_all_adds_the_builtins(rlm):
    result = rlm("plugins", "list", "--all", "--json", plugins=[])
    entries = json.loads(result.stdout)
    host = next(e for e in entries if e["name"] == "rlm-host")
    assert host["builtin"] and host["status"] == "ok"
    assert set(host["provides"]["check"]) == {"config", "home", "python"}


def test_plugins_list_text_shows_errors(rlm):
    result = rlm("plugins", "list", plugins=["rlm-test-broken-import"])
    assert "rlm-test-broken-import 0.0.1  [broken]" in result.stdout
    assert "ImportError: libfoo.so.1" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    (warning,) = result.stderr.splitlines()  # one warning line, a constant event with its fields
    assert "plugin broken" in warning and "plugin=rlm-test-broken-import" in warning


def test_doctor_passes_with_healthy_plugins(rlm):
    result = rlm("plugins", "doctor", "--all", plugins=[GOOD, "rlm-plugin-template"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 problems" in result.stdout
    assert "good-check" in result.stdout and "plugin-template-output" in result.stdout


def test_doctor_fails_on_a_broken_plugin_and_reports_it(rlm):
    result = rlm("plugins", "doctor", "--json", plugins=[GOOD, "rlm-test-raising-hook"])
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    failed = [c for c in report["checks"] if not c["ok"] and c["required"]]
    assert [c["name"] for c in failed] == ["rlm-test-raising-hook"]
    assert "pip install -U rlm-test-raising-hook" in failed[0]["hint"]
    assert any(c["name"] == "test-box" and c["ok"] for c in report["checks"])


def test_doctor_fails_on_a_component_that_is_not_ready(rlm, tmp_path):
    (tmp_path / "work" / "rlm.toml").write_text("[run]\nmax_steps = 'many'\n")
    result = rlm("plugins", "doctor", plugins=[])
    assert result.returncode == 1
    assert "FAIL check        config" in result.stdout
    assert "run.max_steps" in result.stdout


def test_plugin_commands_appear_in_help_and_run(rlm):
    help_text = rlm("--help", plugins=[GOOD]).stdout
    assert re.search(r"\n  hello-test +Say hello from the good test plugin\.", help_text)
    result = rlm("hello-test", "greet", "--name", "ada", plugins=[GOOD])
    assert result.returncode == 0 and result.stdout == "hello ada from rlm-test-good\n"


def test_user_errors_are_one_clear_message_and_debug_shows_the_traceback(rlm):
    result = rlm("hello-test", "fail", plugins=[GOOD])
    assert result.returncode == 1
    assert result.stderr == "error: the good plugin refuses\nhint: this is a test\n"
    debug = rlm("--debug", "hello-test", "fail", plugins=[GOOD])
    assert "Traceback (most recent call last)" in debug.stderr
    assert debug.stderr.endswith("error: the good plugin refuses\nhint: this is a test\n")


def test_unknown_command_suggests_the_closest(rlm):
    result = rlm("plugin", "list", plugins=[])
    assert result.returncode == 2
    assert "No such command 'plugin'. Did you mean 'plugins'?" in result.stderr


def test_help_and_listing_import_no_heavy_framework(plugin_site, isolated_env, tmp_path):
    """`rlm --help` and `rlm plugins list` import plugin hook modules only, never their implementations."""
    import os
    import subprocess

    marker = tmp_path / "heavy"
    probe = (
        "import sys, json\n"
        "from rlm_host.cli.main import main\n"
        "code = main(sys.argv[1:])\n"
        f"heavy = sorted(m for m in sys.modules if m.startswith({HEAVY_MODULES!r}))\n"
        "print('HEAVY=' + json.dumps(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "RLM_TEST_HEAVY_MARKER": str(marker)}
    env.pop("RLM_PLUGINS", None)
    for args in (["--help"], ["plugins", "list"], ["plugins", "list", "--json"], ["--version"]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env)
        assert "HEAVY=[]" in out.stdout, (args, out.stdout[-300:], out.stderr[-300:])
    assert not marker.exists()


def test_fast_paths_skip_pydantic_and_structlog_when_plugins_are_healthy(plugin_site, isolated_env):
    """Guards the startup budget (benchmarks/cli_startup.py): these two imports cost ~0.2 s together."""
    import os
    import subprocess

    probe = (
        "import sys\n"
        "from rlm_host.cli.main import main\n"
        "main(sys.argv[1:])\n"
        "print('LOADED=' + ','.join(m for m in ('pydantic', 'structlog') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(plugin_site), "RLM_PLUGINS": f"{GOOD},rlm-plugin-template"}
    for args in (["--help"], ["plugins", "list"], ["--version"]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env)
        assert out.stdout.rstrip().endswith("LOADED="), (args, out.stdout[-200:], out.stderr[-300:])


def test_log_format_and_verbosity_flags(rlm):
    quiet = rlm("plugins", "list", plugins=[GOOD])
    assert quiet.stderr == ""
    verbose = rlm("-vv", "plugins", "list", plugins=[GOOD])
    assert "plugin loaded" in verbose.stderr and GOOD in verbose.stderr
    as_json = rlm("--log-json", "plugins", "list", plugins=["rlm-test-broken-import"])
    (line,) = as_json.stderr.splitlines()
    record = json.loads(line)
    assert record["level"] == "warning" and record["event"] == "plugin broken"
    assert record["plugin"] == "rlm-test-broken-import" and "libfoo" in record["error"]
    assert record["logger"] == "rlm.plugins"


def test_a_run_loads_no_pydantic_plugin(tmp_path):
    """pydantic loads every installed pydantic plugin at its first model; one (Logfire's, installed with a sink
    plugin) would import its SDK and OpenTelemetry into every command (0.3 s, 17 MB) for an instrumentation rlm
    never turns on. The CLI disables them all, naming none."""
    import os
    import subprocess
    import sys

    import pytest

    pytest.importorskip("logfire")
    (tmp_path / "script.json").write_text('["FINAL(1)"]')
    probe = ("import sys\nfrom rlm_host.cli.main import main\n"
             "main(['run', 'q', '--model', 'scripted:script.json', '--sandbox', 'process', '--quiet'])\n"
             "print('LOGFIRE=' + str('logfire' in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "PYDANTIC_"))}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert "LOGFIRE=False" in done.stdout, done.stdout + done.stderr
