"""The user's own functions in the REPL: ``RLM(tools=[fn])``, ``rlm run --tool module:function`` and
``[run] tools``. A tool is listed in the model's prompt, called from sandbox code through the host bridge in every
runtime, its result reaches the model, its exception is catchable there, a hang is stopped at its timeout, each call
is recorded as a ``tool_call`` sub-call, approvals apply, and a cloned project cannot add one."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from rlm_host.testing.engine import isolated_runner, run_scripted
from support.workers import docker_engine  # noqa: F401 - the fixture

CALLS: list[tuple] = []


def lookup(key: str, default: str = "none") -> str:
    """Find a value in the user's table by key.

    More lines that the prompt does not show."""
    CALLS.append(("lookup", key))
    return {"alpha": "A-1", "beta": "B-2"}.get(key, default)


def explode(row: int) -> int:
    """Always fails."""
    raise KeyError(f"no row {row}")


def hang() -> str:
    """Never returns in time."""
    time.sleep(5)
    return "late"


def unserialisable() -> object:
    return {1, 2}


USE = textwrap.dedent("""\
    ```repl
    found = lookup("alpha")
    try:
        explode(3)
    except Exception as exc:
        caught = str(exc)
    print("found", found, "|", caught)
    ```""")


def steps(events, kind):
    return [e.data for e in events if e.type == kind]


@pytest.mark.parametrize("sandbox", ["monty", "process"])
def test_a_tool_is_listed_called_recorded_and_its_error_caught(tmp_path, sandbox):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    result, events, root = run_scripted(runner, "q", [USE, "FINAL_VAR(found)"], tools=[lookup, explode],
                                        sandbox=sandbox)
    assert result.final_response == "A-1", result.error
    system = root.calls[0][0]["content"]
    assert "`lookup(key: str, default: str = 'none') -> str`: Find a value in the user's table by key." in system
    assert "`explode(row: int) -> int`: Always fails." in system and "More lines" not in system
    observation = json.dumps(steps(events, "step")[0]["observation"])
    assert "found A-1 | KeyError: 'no row 3'" in observation  # the result and the error reached the model
    calls = [d for d in steps(events, "sub_call") if d["kind"] == "tool_call"]
    assert [(c["tool"], c.get("result"), c.get("error")) for c in calls] == [
        ("lookup", '"A-1"', None), ("explode", None, "KeyError: 'no row 3'")]
    assert json.loads(calls[0]["arguments"]) == {"key": "alpha", "default": "none"}
    assert all(c["seconds"] >= 0 for c in calls)
    start = steps(events, "run_start")[0]
    assert start["settings"]["tools"] == [f"{__name__}:lookup", f"{__name__}:explode"]


def test_a_hanging_tool_is_stopped_at_its_timeout_and_the_step_goes_on(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    code = "```repl\ntry:\n    hang()\nexcept Exception as exc:\n    why = str(exc)\nprint(why)\n```"
    started = time.monotonic()
    result, events, _ = run_scripted(runner, "q", [code, "FINAL_VAR(why)"], tools=[hang], tool_timeout=0.5,
                                     sandbox="monty")
    assert time.monotonic() - started < 4
    assert result.final_response == "TimeoutError: hang did not return within 0.5 s"


def test_a_result_that_is_not_json_is_an_exception_in_the_sandbox(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    code = "```repl\ntry:\n    unserialisable()\nexcept Exception as exc:\n    why = str(exc)\n```"
    result, _, _ = run_scripted(runner, "q", [code, "FINAL_VAR(why)"], tools={"unserialisable": unserialisable},
                                sandbox="monty")
    assert "the result of unserialisable is not JSON data" in result.final_response


def test_approvals_apply_to_tools_by_name(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    CALLS.clear()
    code = "```repl\ntry:\n    lookup('beta')\nexcept Exception as exc:\n    why = str(exc)\n```"
    result, _, _ = run_scripted(runner, "q", [code, "FINAL_VAR(why)"], tools=[lookup], approve="read-only",
                                sandbox="monty")
    assert "refused: lookup is not allowed" in result.final_response and CALLS == []
    result, _, _ = run_scripted(runner, "q", [USE.replace("explode(3)", "1/0"), "FINAL_VAR(found)"], tools=[lookup],
                                approve="read-only", approval_rules={"look*": "allow"}, sandbox="monty")
    assert result.final_response == "A-1" and CALLS == [("lookup", "alpha")]


def test_child_runs_get_their_own_tools(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    parent = "```repl\nanswer = rlm_query('look it up')\n```"
    child = "```repl\ntry:\n    got = lookup('alpha')\nexcept Exception as exc:\n    got = str(exc)\n```"
    result, _, _ = run_scripted(runner, "q", [parent, child, "FINAL_VAR(got)", "FINAL_VAR(answer)"],
                                tools=[lookup], sub_tools=[explode], sandbox="monty")
    assert result.final_response == "name 'lookup' is not defined"  # the child has explode only
    result, _, _ = run_scripted(runner, "q", [parent, child, "FINAL_VAR(got)", "FINAL_VAR(answer)"],
                                tools=[lookup], sandbox="monty")  # the parent's, by default
    assert result.final_response == "A-1"


@pytest.fixture
def tools_module(tmp_path) -> Path:
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "usertools.py").write_text(textwrap.dedent('''\
        def lookup(key: str) -> str:
            """Find a value by key."""
            return {"alpha": "A-1"}.get(key, "?")

        NOT_CALLABLE = 3
        '''))
    return folder


def _env(plugin_site: Path, folder: Path) -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(folder), str(plugin_site)])}


def test_rlm_run_tool_flag_and_its_bad_input(rlm, isolated_env, plugin_site, tools_module):
    work = Path(isolated_env["WORK"])
    (work / "root.json").write_text(json.dumps({"responses": ["```repl\nx = lookup('alpha')\n```", "FINAL_VAR(x)"]}))
    env = _env(plugin_site, tools_module)
    done = rlm("run", "q", "--model", "scripted:root.json", "--sandbox", "monty", "--tool", "usertools:lookup",
               env=env, plugins=["rlm-sandbox-monty"])
    assert done.returncode == 0 and done.stdout.strip() == "A-1", done.stderr
    assert "↳ tool_call lookup" in done.stderr
    for spec, message in (("nowhere:f", "cannot import 'nowhere'"), ("usertools:missing", "has no 'missing'"),
                          ("usertools:NOT_CALLABLE", "is not callable"),
                          ("llm_query=usertools:lookup", "'llm_query' is a name the REPL defines itself"),
                          ("usertools", "is not module:function")):
        bad = rlm("run", "q", "--model", "scripted:root.json", "--sandbox", "monty", "--tool", spec, env=env,
                  plugins=["rlm-sandbox-monty"])
        assert bad.returncode == 2 and message in bad.stderr, (spec, bad.stderr)
        assert "Traceback" not in bad.stderr


def test_a_cloned_project_cannot_add_a_tool(rlm, isolated_env, plugin_site, tools_module):
    """A tool is host code: ``[run] tools`` from an untrusted project would run any function of the user's Python
    (``os:system``) on the host."""
    work = Path(isolated_env["WORK"])
    (work / "rlm.toml").write_text('[run]\ntools = ["usertools:lookup"]\nsub_tools = ["os:system"]\n')
    shown = rlm("config", "show", "--json", env=_env(plugin_site, tools_module), plugins=[])
    settings = json.loads(shown.stdout)["settings"]
    assert settings["run.tools"]["value"] == [] and settings["run.sub_tools"]["value"] is None
    assert "run.tools (runs functions of your Python on the host" in shown.stderr
    assert "run.sub_tools (runs functions" in shown.stderr
    trusted = rlm("--trust-config", "config", "show", "--json", env=_env(plugin_site, tools_module), plugins=[])
    assert json.loads(trusted.stdout)["settings"]["run.tools"]["value"] == ["usertools:lookup"]


@pytest.mark.slow
def test_a_tool_is_called_from_a_docker_sandbox(tmp_path, docker_engine):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-docker")
    result, events, _ = run_scripted(runner, "q", [USE, "FINAL_VAR(found)"], tools=[lookup, explode],
                                     sandbox="docker")
    assert result.final_response == "A-1", result.error
    assert "KeyError: 'no row 3'" in json.dumps(steps(events, "step")[0]["observation"])
