"""``rlm plugins doctor`` as a setup script uses it: exit 1 only for what this setup uses (or a broken plugin),
an unknown ``--sink`` is bad input like in ``rlm run``, problems first and one summary line."""

import json
import os
import re
from pathlib import Path

import pytest

from support import GOOD

MONTY = "rlm-sandbox-monty"  # the ready security boundary of a default setup

#: A sandbox plugin that is optional and never ready, like Docker on a machine without an engine.
HOOKS = '''
from rlm_host import DoctorCheck, Readiness, SandboxSpec, hookimpl

def never(settings=None):
    return Readiness(False, "no engine here", "start the engine")

@hookimpl
def rlm_register_sandboxes():
    return [SandboxSpec("far-box", "A boundary that is never ready", "builtins:dict", security_boundary=True,
                        check="unready_hooks:never")]

@hookimpl
def rlm_register_doctor_checks():
    return [DoctorCheck("far-engine", "its engine answers", "unready_hooks:never", section="sandbox.far-box")]
'''


@pytest.fixture
def env(tmp_path, plugin_site):
    (tmp_path / "unready_hooks.py").write_text(HOOKS)
    path = os.pathsep.join([str(tmp_path), str(plugin_site)])
    return {"RLM_PLUGIN_MODULES": "unready_hooks", "PYTHONPATH": path, "OPENAI_API_KEY": "sk-test"}


def test_an_optional_sandbox_that_is_not_ready_does_not_fail_the_doctor(rlm, env):
    result = rlm("plugins", "doctor", plugins=[GOOD, MONTY], env=env)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith("warn sandbox") and "far-box" in lines[0] and "no engine here" in lines[0]
    assert "0 problems" in lines[-1] and "2 optional not ready" in lines[-1] and "--all" in lines[-1]
    assert len(lines) <= 7, result.stdout  # not a wall: the ready components are listed only with --all
    assert "good-check" not in result.stdout
    report = json.loads(rlm("plugins", "doctor", "--json", plugins=[GOOD, MONTY], env=env).stdout)
    rows = {r["name"]: r for r in report["checks"]}
    assert report["ok"] and not rows["far-box"]["ok"] and not rows["far-box"]["required"]
    assert rows["good-check"]["ok"] and not rows["far-engine"]["required"]


def test_a_configured_sandbox_that_is_not_ready_fails_it_with_its_check(rlm, env):
    result = rlm("plugins", "doctor", plugins=[GOOD, MONTY], env={**env, "RLM_RUN__SANDBOX": "far-box"})
    assert result.returncode == 1
    assert re.match(r"FAIL sandbox +far-box +no engine here", result.stdout)
    assert re.search(r"\nFAIL check +far-engine +no engine here", result.stdout)
    assert "2 problems" in result.stdout.splitlines()[-1]


def test_an_unknown_sink_is_bad_input_like_in_rlm_run(rlm, isolated_env):
    (Path(isolated_env["WORK"]) / "x.json").write_text('{"responses": ["FINAL(1)"]}')
    result = rlm("plugins", "doctor", "--sink", "loacl", plugins=["rlm-sink-local"])
    assert result.returncode == 2 and result.stdout == ""
    assert "unknown sink 'loacl' (did you mean 'local'?)" in result.stderr
    assert "choose one of: local" in result.stderr
    run = rlm("run", "q", "--sink", "loacl", "--sandbox", "process", "--model", "scripted:x.json",
              plugins=["rlm-sink-local"])
    assert run.returncode == 2 and "unknown sink 'loacl'" in run.stderr


def test_no_ready_security_boundary_for_sandbox_auto_is_a_problem(rlm, env):
    result = rlm("plugins", "doctor", plugins=[], env=env)  # far-box is the only security boundary
    assert result.returncode == 1 and re.match(r"FAIL sandbox +far-box", result.stdout), result.stdout


def test_a_sink_asked_for_is_shown_and_a_failing_one_fails(rlm):
    result = rlm("plugins", "doctor", "--sink", "test-sink", plugins=[GOOD])
    assert re.search(r"^(ok|FAIL) +sink +test-sink ", result.stdout, re.M), result.stdout


def test_all_lists_everything_grouped_by_kind_in_aligned_columns(rlm, env):
    result = rlm("plugins", "doctor", "--all", plugins=[GOOD, MONTY], env=env)
    assert result.returncode == 0
    listing = result.stdout.split("\n\n", 2)[-1]
    groups = re.findall(r"^(\w+):$", listing, re.M)
    assert groups[:3] == ["environment", "framework", "sandbox"] and "check" in groups
    rows = [line for line in listing.splitlines() if re.match(r"(ok|FAIL|warn) ", line)]
    columns = {len(re.match(r"\S+ +\S+ +", row).group(0)) for row in rows}
    assert len(rows) > 10 and len(columns) == 1, rows  # every detail starts in the same column
