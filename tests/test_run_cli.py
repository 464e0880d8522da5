"""``rlm run`` as a user runs it: the console script, real files, a real HTTP model server on loopback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rlm_host.testing.openai_server import OpenAIServer, answer

NEEDLE = "The magic number is 4217."
FIND_AND_CHECK = (
    "```repl\nimport re\nm = re.search(r'magic number is (\\d+)', context)\nanswer = m.group(1)\n"
    "check = llm_query('Is ' + answer + ' a number? Answer yes or no.')\nprint(answer, check)\n```"
)


def write_haystack(path: Path, chars: int) -> Path:
    filler = "the quick brown fox jumps over the lazy dog "
    with path.open("w") as handle:
        half = chars // 2
        for size in (half, chars - half):
            written = 0
            while written < size:
                piece = filler[: min(len(filler), size - written)]
                handle.write(piece)
                written += len(piece)
            if size == half:
                handle.write(NEEDLE)
    return path


def write_script(path: Path, responses: list, rules: list | None = None) -> Path:
    path.write_text(json.dumps({"responses": responses, "rules": rules or []}))
    return path


@pytest.fixture
def work(isolated_env) -> Path:
    return Path(isolated_env["WORK"])


def test_run_json_with_a_scripted_model(rlm, work):
    write_haystack(work / "hay.txt", 50_000)
    write_script(work / "root.json", [FIND_AND_CHECK, "FINAL_VAR(answer)"], [{"match": "a number", "text": "yes"}])
    result = rlm("run", "What is the magic number?", "--context", "hay.txt", "--model", "scripted:root.json",
                 "--sandbox", "process", "--json", plugins=[])
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["completed"] and run["final_response"] == "4217" and run["steps"] == 2
    assert run["usage"]["sub"]["calls"] == 1
    assert "── step 1 · run_code" in result.stderr  # the live view goes to stderr
    assert Path(work / run["trajectory_path"]).is_file()
    lines = result.stderr.splitlines()
    header, code, sub_call, step_2 = (next(i for i, line in enumerate(lines) if text in line)
                                      for text in ("── step 1", "│ import re", "↳ llm_query", "── step 2"))
    assert header < code < sub_call < step_2  # a step's sub-calls are shown under its code
    assert "✓ final after 2 steps" in result.stderr


def test_context_from_stdin_and_from_a_directory(rlm, work):
    write_script(work / "s.json", ["```repl\nFINAL(str(len(context)))\n```"])
    result = rlm("run", "size?", "--context", "-", "--model", "scripted:s.json", "--sandbox", "process", "-q",
                 plugins=[], input="12345")
    assert result.stdout.strip() == "5"
    docs = work / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("alpha")
    (docs / "sub" / "b.md").write_text("beta")
    (docs / ".hidden").write_text("never")
    write_script(work / "d.json", ["```repl\nFINAL(', '.join(list_files()) + ' / ' + load_file('sub/b.md'))\n```"])
    result = rlm("run", "files?", "--context", "docs", "--model", "scripted:d.json", "--sandbox", "process", "-q",
                 plugins=[])
    assert result.stdout.strip() == "a.txt, sub/b.md / beta"


def test_json_context_file_loads_as_an_object(rlm, work):
    (work / "data.json").write_text(json.dumps({"items": [3, 4]}))
    write_script(work / "s.json", ["```repl\nFINAL(sum(context['items']))\n```"])
    result = rlm("run", "sum?", "-c", "data.json", "--model", "scripted:s.json", "--sandbox", "process", "-q",
                 plugins=[])
    assert result.stdout.strip() == "7"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--context", "missing.txt"], "error: context file not found: missing.txt"),
        (["--env", "pure"], "error: unknown environment 'pure' (did you mean 'pure_rlm'?)"),
        (["--sandbox", "auto"], "error: no secure sandbox is installed and ready"),
        (["--max-steps", "0"], "error: invalid run option: --max-steps: Input should be greater than or equal to 1"),
        (["--model", "nocolon"], "error: model 'nocolon' names no provider: write provider:model"),
        (["--context", "bad.json"], "error: bad.json: not valid JSON (line 1, column 2"),
        (["--context", "empty-dir"], "error: no readable text files under empty-dir"),
        (["--max-cost", "lots"], "Invalid value for '--max-cost'"),
    ],
)
def test_bad_input_is_one_clear_error_and_exits_2(rlm, work, args, message):
    (work / "bad.json").write_text("{nope")
    (work / "empty-dir").mkdir(exist_ok=True)
    base = ["run", "q", "--model", "scripted:none.json", "--sandbox", "process"]
    result = rlm(*base, *args, plugins=[])
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_script_file_is_one_clear_error(rlm, work):
    result = rlm("run", "q", "--model", "scripted:absent.json", "--sandbox", "process", plugins=[])
    assert result.returncode != 0 and "absent.json" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [["run", "q", "--context", "missing.txt"], ["run", "q", "--model", "gpt-4o"],
                                  ["plugins", "list", "--bogus"]])
def test_with_json_an_error_is_a_json_object_on_stdout(rlm, work, args):
    result = rlm(*args, "--json", plugins=[])
    error = json.loads(result.stdout)
    assert error["exit_code"] == result.returncode == 2 and error["error"] in result.stderr
    assert set(error) == {"error", "hint", "exit_code"}


def test_no_model_configured(rlm, work):
    result = rlm("run", "q", "--sandbox", "process", plugins=[], env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert result.returncode == 2
    assert "error: no model configured" in result.stderr and "hint: set OPENAI_API_KEY" in result.stderr


def test_incomplete_run_exits_1_with_the_synthesised_answer(rlm, work):
    write_script(work / "s.json", ["```repl\nprint(1)\n```", "my best guess"])
    result = rlm("run", "q", "--model", "scripted:s.json", "--sandbox", "process", "--max-steps", "1", "--json",
                 plugins=[])
    assert result.returncode == 1
    run = json.loads(result.stdout)
    assert run["termination_reason"] == "max_steps" and run["final_response"] == "my best guess"


@pytest.mark.parametrize("env,step", [
    ("pure_rlm", "```repl\nanswer = context.split()[-1]\n```"),
    ("generic", '{"action": "run_python", "code": "answer = context.split()[-1]"}'),
])
@pytest.mark.parametrize("synthesis,expected", [("FINAL_VAR(answer)", "forty-two"), ("FINAL(forty-one)", "forty-one"),
                                                ("FINAL_VAR(nothing_by_that_name)", None)])
def test_a_synthesis_reply_in_the_loops_form_is_read_as_the_answer_it_names(rlm, work, env, step, synthesis, expected):
    """At the step limit a synthesis reply ``FINAL_VAR(answer)`` was printed literally as the answer."""
    (work / "c.txt").write_text("the answer is forty-two")
    write_script(work / "s.json", [step, synthesis])
    result = rlm("run", "q", "--context", "c.txt", "--env", env, "--model", "scripted:s.json", "--sandbox", "process",
                 "--max-steps", "1", "--json", plugins=["rlm-env-generic"])  # generic is a plugin
    assert result.returncode == 1, result.stderr
    run = json.loads(result.stdout)
    assert run["termination_reason"] == "max_steps" and run["final_response"] == expected


def test_a_framework_runs_synthesis_reply_in_the_loops_form_is_read_as_its_answer(rlm, work, plugin_site):
    write_script(work / "s.json", ["print(1)", "FINAL(forty-one)"])
    tests = str(Path(__file__).resolve().parent)
    result = rlm("run", "q", "--framework", "echo", "--model", "scripted:s.json", "--sandbox", "process",
                 "--max-steps", "1", "--json", plugins=[],
                 env={"RLM_PLUGIN_MODULES": "support.echo_framework",
                      "PYTHONPATH": f"{plugin_site}:{tests}"})
    assert result.returncode == 1, result.stderr
    assert json.loads(result.stdout)["final_response"] == "forty-one"


def test_a_first_final_before_looking_is_refused_once_by_name_and_a_run_option_turns_it_off(rlm, work):
    """The "nudge" refusing a first FINAL(...) with a context was undocumented and not an option."""
    (work / "c.txt").write_text("forty-two")
    write_script(work / "one.json", ["FINAL(42)"])
    refused = rlm("run", "q", "--context", "c.txt", "--model", "scripted:one.json", "--sandbox", "process", plugins=[])
    assert refused.returncode == 1 and "── step 1 · first_answer_refused · reward" in refused.stderr, refused.stderr
    assert "without examining `context`" in refused.stderr
    off = rlm("run", "q", "--context", "c.txt", "--model", "scripted:one.json", "--sandbox", "process",
              "--no-nudge-first-answer", plugins=[])
    assert off.returncode == 0 and off.stdout == "42\n" and "── step 1 · final" in off.stderr, off.stderr
    (work / "rlm.toml").write_text("[run]\nnudge_first_answer = false\n")
    configured = rlm("run", "q", "--context", "c.txt", "--model", "scripted:one.json", "--sandbox", "process", "-q",
                     plugins=[])
    assert configured.returncode == 0 and configured.stdout == "42\n", configured.stderr


def haystack_over_http(rlm, work: Path, chars: int, sandbox: str = "process", plugins: tuple = ()) -> dict:
    hay = write_haystack(work / f"hay_{chars}.txt", chars)
    with OpenAIServer() as server:
        server.push(answer(FIND_AND_CHECK, prompt_tokens=900), answer("yes"), answer("FINAL_VAR(answer)"))
        result = rlm("run", "What is the magic number?", "--context", str(hay), "--model", "openai:test-model",
                     "--base-url", server.url, "--sandbox", sandbox, "--json", plugins=list(plugins),
                     env={"OPENAI_API_KEY": "", "DOCKER_HOST": os.environ.get("DOCKER_HOST", "")})
        assert result.returncode == 0, result.stderr[-2000:]
        root_prompts = [json.dumps(body) for body in server.bodies]
    assert all(NEEDLE not in prompt for prompt in root_prompts)
    assert max(len(p) for p in root_prompts) < 20_000
    run = json.loads(result.stdout)
    assert run["final_response"] == "4217" and run["usage"]["root"]["input_tokens"] > 0
    replay = rlm("replay", run["run_id"], "--no-interactive", plugins=["rlm-runs"])
    assert replay.returncode == 0 and "FINAL_VAR(answer)" in replay.stdout and "4217" in replay.stdout
    return run


@pytest.mark.parametrize("chars", [1_000_000, 10_000_000])
def test_haystack_through_an_openai_compatible_server(rlm, work, chars):
    haystack_over_http(rlm, work, chars)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["process", "monty", "docker"])
def test_100mb_haystack_through_an_openai_compatible_server(rlm, work, sandbox):
    """The engine issue's task in every runtime: the sandboxes' own plugins are selected, and Docker gets a
    real engine (found or started once per session)."""
    plugins = {"process": (), "monty": ("rlm-sandbox-monty",), "docker": ("rlm-sandbox-docker",)}[sandbox]
    if sandbox == "monty":
        pytest.importorskip("rlm_sandbox_monty")
    if sandbox != "docker":
        run = haystack_over_http(rlm, work, 100_000_000, sandbox, plugins)
    else:
        pytest.importorskip("rlm_sandbox_docker")
        from rlm_sandbox_docker.testing import prepare_engine, release_engine

        prepare_engine()
        try:
            run = haystack_over_http(rlm, work, 100_000_000, sandbox, plugins)
        finally:
            release_engine()  # stops the daemon only if this test started it
    assert run["steps"] == 2 and run["sandbox"] == sandbox


def test_ctrl_c_writes_the_final_event_and_exits_130(plugin_site, work):
    import os
    import signal
    import subprocess
    import time

    from support import RLM_SCRIPT

    write_script(work / "slow.json", ["```repl\nprint(1)\n```", {"text": "```repl\nprint(2)\n```", "delay": 30}])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLM_")}
    env.update(PYTHONPATH=str(plugin_site), RLM_PLUGINS="")
    process = subprocess.Popen([RLM_SCRIPT, "run", "q", "--model", "scripted:slow.json", "--sandbox", "process",
                                "--json"], cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 20
    runs = work / ".rlm" / "runs"
    while time.monotonic() < deadline and not (runs.exists() and any(
            '"type":"step"' in p.read_text().replace(" ", "") for p in runs.glob("*.jsonl"))):
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["termination_reason"] == "cancelled" and result["steps"] == 1
    (trajectory,) = runs.glob("*.jsonl")
    last = json.loads(trajectory.read_text().splitlines()[-1])
    assert last["type"] == "final" and last["data"]["termination_reason"] == "cancelled"
    assert "Traceback" not in stderr


def test_runs_show_shows_the_labels_and_instructions_a_run_recorded(rlm, work):
    """Labels and instructions were recorded with the run, but ``rlm runs show`` showed neither."""
    (work / "c.txt").write_text("text")
    write_script(work / "s.json", ["```repl\nprint(1)\n```", "FINAL(42)"])
    ran = rlm("run", "q", "--context", "c.txt", "--model", "scripted:s.json", "--sandbox", "process", "-q",
              "--label", "experiment=chunking", "--label", "try=2", "--instructions", "Answer in one word.", plugins=[])
    assert ran.returncode == 0, ran.stderr
    shown = rlm("runs", "show", "latest", plugins=["rlm-runs"])
    assert "labels: experiment=chunking  try=2" in shown.stdout and "instructions: Answer in one word." in shown.stdout
