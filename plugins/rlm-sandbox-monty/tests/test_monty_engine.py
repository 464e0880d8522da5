"""The monty runtime as users meet it: registered through its entry point, chosen by default, driving real runs
of the engine with scripted models (``rlm_host.testing``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_monty")

from rlm_host import ConfigError  # noqa: E402
from rlm_host.sdk.embedding import load_settings  # noqa: E402
from rlm_host.testing import (  # noqa: E402
    FIND_NEEDLE, HELPERS_SOURCE, ScriptedConnector, assert_context_stays_out_of_the_prompt, haystack, isolated_runner,
)
from rlm_host.testing import run_scripted as run  # noqa: E402

from rlm_sandbox_monty.runtime import MontySandbox  # noqa: E402

PLUGIN = "rlm-sandbox-monty"


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, plugins=PLUGIN, sandbox="monty")


def test_registered_ready_and_listed(rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN).collect_all()
    dist = next(d for d in host.distributions if d.name == PLUGIN)
    assert dist.status == "ok", dist.errors
    assert dist.provides == {"sandbox": ["monty"]}
    spec = host.sandboxes().get("monty")
    assert spec.security_boundary and spec.readiness().ok
    command = [str(Path(sys.executable).with_name("rlm")), "plugins", "list", "--json"]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("RLM_")}, "RLM_PLUGINS": PLUGIN}
    out = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    listed = {d["name"]: d for d in json.loads(out.stdout)}
    assert listed[PLUGIN]["status"] == "ok" and listed[PLUGIN]["provides"] == {"sandbox": ["monty"]}


def test_settings_section_is_validated(tmp_path, rlm_plugin_host):
    host = rlm_plugin_host(PLUGIN)
    (tmp_path / "rlm.toml").write_text("[sandbox.monty]\nmax_recursion_depth = 300\n")
    loaded = load_settings(environ={"HOME": str(tmp_path)}, cwd=tmp_path, host=host)
    assert loaded.component("sandbox", "monty").max_recursion_depth == 300
    (tmp_path / "rlm.toml").write_text("[sandbox.monty]\nmax_recursion_dept = 300\n")
    with pytest.raises(ConfigError, match="did you mean 'max_recursion_depth'"):
        load_settings(environ={"HOME": str(tmp_path)}, cwd=tmp_path, host=host)


def test_helpers_run_in_monty():
    with MontySandbox() as session:
        session.set_variable("context", ["first doc", "second doc"])
        session.set_variable("context_names", ["a.txt", "b.txt"])
        assert session.execute(HELPERS_SOURCE).ok
        result = session.execute(
            "print(chunk_indices(10, 4, 1))\nprint(chunk_text('abcdefghij', 4))\n"
            "print(list_files(), load_file('b.txt'))\n"
            "try:\n    load_file('c.txt')\nexcept KeyError as e:\n    print('missing:', e)"
        )
        assert result.ok, result.error
        lines = result.stdout.splitlines()
        assert lines[0] == "[(0, 4), (3, 7), (6, 10)]"
        assert lines[1] == "['abcd', 'efgh', 'ij']"
        assert lines[2] == "['a.txt', 'b.txt'] second doc"
        assert lines[3].startswith("missing:") and "no file named 'c.txt'" in lines[3]
        assert session.execute("chunk_indices(10, 0)").error.startswith("ValueError: need chunk_size > 0")


def test_finds_the_needle_with_a_sub_call(runner):
    rules = [{"match": "Extract the number", "text": "4217"}]
    result, events, root = run(runner, "What is the magic number?", [FIND_NEEDLE, "FINAL_VAR(answer)"],
                               sub_rules=rules, context=haystack(200_000))
    assert result.completed and result.final_response == "4217", result.error
    assert result.sandbox == "monty" and result.steps == 2 and result.usage.sub.calls == 1
    system = root.calls[0][0]["content"]
    assert "Monty" in system and "class inheritance" in system  # the python notes reach the model


def test_monty_ranks_first_for_auto(rlm_plugin_host):
    """Of the installed security boundaries, ``--sandbox auto`` tries monty first (docker, needing an engine, next)."""
    sandboxes = rlm_plugin_host(PLUGIN, "rlm-sandbox-docker").sandboxes()
    ranked = sorted((spec for spec in sandboxes if spec.security_boundary), key=lambda spec: -spec.priority)
    assert ranked[0].name == "monty" and all(spec.priority < ranked[0].priority for spec in ranked[1:])


def test_monty_is_the_default_sandbox(runner):
    result, _, _ = run(runner, "q", ["```repl\nFINAL(str(len(context)))\n```"], context="abcd", sandbox="auto")
    assert result.sandbox == "monty" and result.final_response == "4"


def test_a_10_mb_context_runs_with_a_flat_prompt(runner):
    assert_context_stays_out_of_the_prompt(runner, sizes=(1_000, 10_000_000))


def test_documents_context_and_submit(runner):
    docs = ["first doc", "second doc mentions 4217"]
    code = "```repl\nprint(len(context), list_files())\nSUBMIT(answer=load_file('document_1'))\n```"
    result, _, _ = run(runner, "Which doc?", [code], context=docs)
    assert result.final_response == "second doc mentions 4217"


def test_rlm_query_runs_a_child_in_its_own_monty_session(runner):
    parent_code = "```repl\nr = rlm_query('Count the words', context='a b c')\nprint(r)\nFINAL_VAR('r')\n```"
    child_reply = "```repl\nFINAL(str(len(context.split())))\n```"
    root = ScriptedConnector.from_responses([parent_code], rules=[{"match": "Count the words", "text": child_reply}])
    events = []
    result = runner.run_task("q", context="ctx", sandbox="monty", connectors={"root": root},
                             on_event=events.append)
    assert result.final_response == "3", result.error
    assert [e for e in events if e.type == "final" and e.depth == 1]


def test_a_step_that_times_out_is_reported_and_the_run_goes_on(runner):
    result, events, root = run(runner, "q", ["```repl\nmine = 1\nwhile True:\n    pass\n```",
                                             "```repl\nFINAL(str(len(context)))\n```"],
                               context="abcd", exec_timeout=1.0)
    assert result.final_response == "4"
    block = [e for e in events if e.type == "step"][0].data["observation"]["blocks"][0]
    assert block.get("timed_out") and block.get("restarted")
    assert "time limit" in root.calls[1][-1]["content"]
