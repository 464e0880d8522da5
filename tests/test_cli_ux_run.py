"""``rlm run`` as a user types it: several paths after one ``--context``, nothing on stdout for a run
without an answer, and exit codes by one rule (2 bad input or usage, 1 failure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PLUGINS = ["rlm-sandbox-monty"]
SCRIPT = {"responses": ["```repl\nprint(len(context))\n```", "FINAL(42)"]}


@pytest.fixture
def work(isolated_env) -> Path:
    work = Path(isolated_env["WORK"])
    (work / "a.txt").write_text("The magic number is 42.\n")
    (work / "b.md").write_text("# Notes\nnothing here\n")
    (work / "s.json").write_text(json.dumps(SCRIPT))
    (work / "empty.json").write_text(json.dumps({"responses": []}))
    return work


def _documents(result) -> int:
    path = Path(json.loads(result.stdout)["trajectory_path"])
    return json.loads(path.read_text().splitlines()[0])["data"]["context"].get("documents", 1)


@pytest.mark.parametrize("args", [
    ["q", "--context", "a.txt", "b.md"],
    ["--context", "a.txt", "b.md", "What is in them?"],
    ["q", "-c", "a.txt", "b.md"],
    ["q", "--context=a.txt", "b.md"],
    ["q", "--context", "a.txt", "--context", "b.md"],
])
def test_several_paths_after_one_context(rlm, work, args):
    result = rlm("run", *args, "--model", "scripted:s.json", "--json", plugins=PLUGINS)
    assert result.returncode == 0, result.stderr
    assert _documents(result) == 2


def test_a_missing_second_context_is_an_rlm_error_with_a_hint(rlm, work):
    result = rlm("run", "q", "--context", "a.txt", "missing.md", "--model", "scripted:s.json", plugins=PLUGINS)
    assert result.returncode == 2
    assert "error: unexpected argument(s): missing.md (no such file: missing.md)" in result.stderr
    assert "hint: several contexts: --context a.txt b.md" in result.stderr and "Usage:" not in result.stderr


def test_help_says_how_to_pass_several_contexts(rlm, work):
    result = rlm("run", "-h", plugins=PLUGINS)
    assert "--context a.txt b.md" in " ".join(result.stdout.split())


@pytest.mark.parametrize("quiet", [[], ["--quiet"]])
def test_a_failed_run_prints_nothing_on_stdout(rlm, work, quiet):
    result = rlm("run", "q", "--context", "a.txt", "--model", "scripted:empty.json", *quiet, plugins=PLUGINS)
    assert result.returncode == 1 and result.stdout == ""
    assert "error: scripted model script empty.json: no response left" in result.stderr
    assert "(no answer)" not in result.stdout + result.stderr


def test_a_failed_run_with_json_still_prints_the_run_result(rlm, work):
    result = rlm("run", "q", "--model", "scripted:empty.json", "--json", plugins=PLUGINS)
    assert result.returncode == 1
    data = json.loads(result.stdout)
    assert data["termination_reason"] == "error" and data["final_response"] is None


def test_a_missing_api_key_is_bad_input(rlm, work):
    result = rlm("run", "q", "--model", "openai:gpt-4o-mini", plugins=PLUGINS,
                 env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert result.returncode == 2 and "error: no API key for openai" in result.stderr


def test_an_unavailable_docker_sandbox_is_bad_input(rlm, work, tmp_path):
    pytest.importorskip("rlm_sandbox_docker")
    result = rlm("run", "q", "--model", "scripted:s.json", "--sandbox", "docker", plugins=["rlm-sandbox-docker"],
                 env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"})
    assert result.returncode == 2 and "error: the docker sandbox is not ready" in result.stderr, result.stderr
    assert result.stdout == ""


def test_instructions_from_a_missing_file_has_no_pydantic_prefix(rlm, work):
    result = rlm("run", "q", "--model", "scripted:s.json", "--instructions", "@missing", plugins=PLUGINS)
    assert result.returncode == 2
    assert "instructions: cannot read missing" in result.stderr and "Value error" not in result.stderr


def test_the_spent_budget_has_a_useful_repr(isolated_env):
    from rlm_host import RLM

    rlm = RLM("scripted:x.json", shared_budget=True, max_tokens=1000, max_cost=0.5)
    assert repr(rlm.spent).startswith("Budget(tokens=0/1,000, cost=$0.0000/$0.5, llm_calls=0/")
