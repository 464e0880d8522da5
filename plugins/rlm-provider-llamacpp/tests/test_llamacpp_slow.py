"""The real SmolLM2-135M model: in-process, behind llama.cpp's OpenAI-compatible server, and inside an RLM run,
with the environments' reply formats enforced as grammars (the README's main job among them).

Marked slow (they need the llama-cpp-python build and load a ~100 MB model); answers are kept short so the whole
file runs in about two minutes on two cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import llama_cpp
import pytest
from rlm_host import ModelError
from rlm_host.sdk.embedding import load_settings
from rlm_host.sdk.models import ModelOptions, ReplyFormat, count_tokens, estimate_tokens, resolve_connector
from rlm_host.testing import ENVIRONMENT_REPLY_FORMATS, ScriptedConnector, isolated_runner

from rlm_provider_llamacpp.connector import LlamaCppConnector
from rlm_provider_llamacpp.grammars import compiled_grammar
from rlm_provider_llamacpp.models import bundled_path

from rlm_provider_llamacpp.testing import llama_server  # noqa: F401 (a fixture)

pytestmark = pytest.mark.slow

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Answer briefly."},
    {"role": "user", "content": "What is the capital of France?"},
]
REPO = Path(__file__).resolve().parents[3]
(PURE_RLM, code_or_final), (GENERIC, is_action) = (ENVIRONMENT_REPLY_FORMATS[name] for name in ("pure_rlm", "generic"))
#: Two documents: ``context`` is a list, so the tiny model's ``context.find(…)`` fails and the run goes on for
#: several steps, each reply still code or a final answer.
DOCUMENTS = {"a.txt": "Day 116. Calm, -9 C.\n" * 20, "b.txt": "Day 117. INCIDENT: the thermistor T4 failed.\n"}


def rlm_command(*args: str, cwd: Path, **environ: str) -> subprocess.CompletedProcess:
    """``rlm ARGS`` in ``cwd`` with no provider key from the developer's shell, every plugin loaded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))}
    env.update(HOME=str(cwd), **environ)
    rlm = str(Path(sys.executable).with_name("rlm"))
    return subprocess.run([rlm, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def steps_of(run: dict, cwd: Path) -> list[dict]:
    """The step events of a run printed with ``--json``."""
    lines = (cwd / run["trajectory_path"]).read_text().splitlines()
    return [event["data"] for event in map(json.loads, lines) if event["type"] == "step"]


@pytest.fixture(scope="module")
def local() -> LlamaCppConnector:
    """The embedded model, loaded in this process, answering at most 24 tokens."""
    connector = LlamaCppConnector("smollm2", ModelOptions(max_tokens=24))
    connector.load()
    return connector


# ------------------------------------------------------------------------------ in-process


def test_in_process_chat_answers_with_real_token_counts(local):
    result = local.complete(MESSAGES)
    assert result.text and result.text.strip(), result
    assert result.input_tokens > 10 and 0 < result.output_tokens <= 24
    assert result.finish_reason in ("stop", "length") and result.seconds > 0
    assert result.model == "smollm2" and "malformed" not in result.raw
    again = local.complete(MESSAGES)
    assert again.text == result.text  # fixed seed: the same question gets the same answer


def test_count_tokens_is_the_models_own_tokenizer(local):
    text = "x = [i ** 2 for i in range(10)]"  # code: more tokens than the estimate's four characters each
    assert local.count_tokens(text) == len(local.load().llama.tokenize(text.encode(), add_bos=False))
    assert count_tokens(text, local) == local.count_tokens(text) != estimate_tokens(text)  # the host uses it
    assert local.reports_cost and local.complete(MESSAGES).cost == 0.0  # a cost limit needs no price for it


def test_connectors_of_one_model_share_it_and_concurrent_calls_are_serialised(local):
    other = LlamaCppConnector("smollm2", ModelOptions(max_tokens=8))
    assert other.load() is local.load()
    results: list = []
    threads = [
        threading.Thread(target=lambda c=c: results.append(c.complete(MESSAGES))) for c in (local, other, local)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 3 and all(r.output_tokens > 0 for r in results)


def test_timeout_and_over_long_prompt_are_model_errors(local):
    with pytest.raises(ModelError, match="no answer within"):
        local.complete(MESSAGES, timeout=0.001)
    too_long = [{"role": "user", "content": "apple " * 9000}]
    with pytest.raises(ModelError, match="context window") as info:
        local.complete(too_long)
    assert "n_ctx" in info.value.hint
    assert local.complete(MESSAGES).output_tokens > 0  # still usable afterwards


# ------------------------------------------------------------------------------ reply formats, in-process


@pytest.mark.parametrize("seed", range(4))
def test_whatever_the_model_prefers_a_reply_under_the_grammar_is_code_or_final(local, seed):
    """Sampled hot (temperature 1.5, four seeds), so the replies differ: each one that ends by itself (not cut by
    max_tokens) parses as pure_rlm code or a final answer, and as a generic action object."""
    llama = local.load().llama
    for reply_format, reads in ENVIRONMENT_REPLY_FORMATS.values():
        llama.reset()
        response = llama.create_chat_completion(
            messages=[{"role": "user", "content": "Explore the variable `context` with Python, then answer."}],
            grammar=compiled_grammar(llama_cpp, llama, reply_format), temperature=1.5, seed=seed, max_tokens=200,
        )
        choice = response["choices"][0]
        assert choice["finish_reason"] in ("stop", "length")
        if choice["finish_reason"] == "stop":
            assert reads(choice["message"]["content"]), choice["message"]["content"]


def test_a_several_step_run_in_process_where_every_reply_is_code_or_final(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = LlamaCppConnector("smollm2")
    result = isolated_runner(tmp_path, plugins="rlm-sandbox-monty").run_task(
        "Which sensor failed on day 117?", context=list(DOCUMENTS.values()), connectors={"root": model, "sub": model},
        sandbox="monty", max_steps=3,
    )
    steps = steps_of(result.model_dump(), tmp_path)
    assert len(steps) >= 2, steps
    assert all(code_or_final(step["reply"]) for step in steps), [step["reply"] for step in steps]
    assert all(step["action"] in ("run_code", "final") for step in steps)


def test_the_main_job_runs_code_in_monty_asks_a_sub_model_and_finishes(tmp_path):
    """``make run``'s command, as a newcomer gets it (no key: the embedded model, the grammar, Monty): the reply
    runs code, its llm_query reads a chunk of the document, and the run ends with a final answer. SmolLM2 decodes
    greedily, so this repeats; if it fails after a llama.cpp upgrade, the demo changed: look at the live view."""
    question = re.search(r"^QUESTION \?= (.+)$", (REPO / "Makefile").read_text(), re.MULTILINE).group(1)
    result = rlm_command("run", question, "--context", str(REPO / "samples" / "station_log.txt"), "--max-steps", "4",
                         "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads(result.stdout)
    assert (run["model"], run["termination_reason"]) == ("llamacpp:smollm2", "final"), run
    steps = steps_of(run, tmp_path)
    assert all(step["observation"]["blocks"] for step in steps), steps
    assert run["usage"]["sub"]["calls"] >= 1 and run["final_response"]
    events = [json.loads(line) for line in (tmp_path / run["trajectory_path"]).read_text().splitlines()]
    assert events[0]["data"]["sandbox"] == "monty"
    assert any(e["type"] == "sub_call" and "thermistor T4 failed" in e["data"]["prompt"] for e in events)  # the chunk


# ------------------------------------------------------------------------------ OpenAI-compatible server


def test_builtin_openai_provider_against_a_real_llama_cpp_server(llama_server, rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host()
    settings = load_settings(environ={}, cwd=rlm_isolated.work, host=host)
    options = ModelOptions(base_url=llama_server, max_tokens=24, temperature=0.2)
    connector = resolve_connector("openai:smollm2", host=host, settings=settings, options=options)
    try:
        result = connector.complete(MESSAGES)
    finally:
        connector.close()
    assert result.text and result.text.strip(), result
    assert result.input_tokens > 10 and 0 < result.output_tokens <= 24
    assert result.finish_reason in ("stop", "length") and "malformed" not in result.raw


# ------------------------------------------------------------------------------ an RLM run


def test_pure_rlm_run_whose_llm_query_reaches_the_real_model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = isolated_runner(tmp_path)
    root = ScriptedConnector.from_responses(
        [
            "```repl\nanswer = llm_query('In one word, what colour is the sky? Context: ' + context[:60])\n"
            "print(repr(answer))\n```",
            "FINAL_VAR(answer)",
        ],
        name="scripted:root",
    )
    sub = LlamaCppConnector("smollm2", ModelOptions(max_tokens=16))
    result = runner.run_task(
        "What colour is the sky?",
        context="A note about the weather: the sky is blue on a clear day.",
        connectors={"root": root, "sub": sub},
        sandbox="process",
    )
    assert result.completed and result.termination_reason == "final", result.error
    assert result.usage.sub.calls == 1
    assert result.usage.sub.input_tokens > 0 and result.usage.sub.output_tokens > 0
    assert result.final_response is not None
    assert result.usage.sub.cost == 0.0  # a local model costs nothing, and the run says so rather than "unknown"


def test_cli_run_against_the_real_server_then_replay_without_it(llama_server, tmp_path):
    """`rlm run` whose root AND sub model are the real model behind llama.cpp's server (a tiny model: it may not
    finish, then the answer is synthesised), then `--model replay:RUN_ID` reproduces the final answer with the
    server gone."""
    import json
    import os
    from pathlib import Path

    rlm = str(Path(sys.executable).with_name("rlm"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLM_", "OPENAI_"))}
    env.update(HOME=str(tmp_path), RLM_PLUGINS="rlm-sandbox-monty,rlm-runs", RLM_PROVIDER__OPENAI__MAX_RETRIES="1",
               RLM_PROVIDER__OPENAI__CONTEXT_WINDOW="4096",  # the server's n_ctx: the history is compacted to fit
               RLM_RUN__MAX_REPLY_TOKENS="256")  # a tiny model rambles: bounded replies keep the window usable
    (tmp_path / "notes.txt").write_text("Weather log. Day 3: the sky was blue. Day 4: rain.\n" * 20)
    common = ["What colour was the sky on day 3?", "--context", "notes.txt", "--max-steps", "2", "--json"]
    first = subprocess.run([rlm, "run", *common, "--model", "openai:smollm2", "--base-url", llama_server],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode in (0, 1), first.stderr[-2000:]
    recorded = json.loads(first.stdout)
    assert recorded["termination_reason"] in ("final", "max_steps"), recorded["error"]
    assert recorded["usage"]["root"]["input_tokens"] > 0 and recorded["usage"]["root"]["output_tokens"] > 0
    assert recorded["final_response"], recorded
    run_id = recorded["run_id"]
    again = subprocess.run([rlm, "run", *common, "--model", f"replay:{run_id}", "--sub-model", f"replay:{run_id}"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    replayed = json.loads(again.stdout)
    assert replayed["final_response"] == recorded["final_response"], again.stderr[-2000:]
    assert replayed["steps"] == recorded["steps"] and replayed["run_id"] != run_id


def test_the_llama_cpp_server_enforces_a_grammar_and_a_json_schema(llama_server, rlm_isolated, rlm_plugin_host):
    host = rlm_plugin_host("rlm-provider-compatible")  # llamacpp_server: the OpenAI-compatible services' plugin
    settings = load_settings(environ={}, cwd=rlm_isolated.work, host=host)
    options = ModelOptions(base_url=llama_server, max_tokens=200, temperature=0.0)  # whatever the server sampled before
    connector = resolve_connector("llamacpp_server:smollm2", host=host, settings=settings, options=options)
    try:
        digits = connector.complete(MESSAGES, reply_format=ReplyFormat("digits", gbnf="root ::= [0-9]{3}\n"))
        action = connector.complete(MESSAGES, reply_format=GENERIC)
        free = connector.complete(MESSAGES)
    finally:
        connector.close()
    assert len(digits.text) == 3 and digits.text.isdigit() and digits.raw["reply_format"] == "digits", digits
    # the schema shapes the reply: an object whose first key is the action, one of the environment's. (The server's
    # schema-to-grammar lets a string hold a raw newline and the reply may stop at max_tokens, so the whole text is
    # not always valid JSON: see the session note of issue 32; issue 35 holds replies to each format.)
    enum = "|".join(GENERIC.json_schema["properties"]["action"]["enum"])
    assert re.match(rf'\{{\s*"action"\s*:\s*"({enum})"', action.text), action
    assert action.raw["reply_format"] == GENERIC.name
    assert not free.text.isdigit() and "reply_format" not in free.raw


def test_a_run_through_the_llama_cpp_server_has_every_reply_code_or_final(llama_server, tmp_path):
    """The same several-step run, the model behind llama.cpp's server: the grammar goes in the request."""
    for name, text in DOCUMENTS.items():
        (tmp_path / "docs").mkdir(exist_ok=True)
        (tmp_path / "docs" / name).write_text(text)
    result = rlm_command("run", "Which sensor failed on day 117?", "--context", "docs", "--max-steps", "2", "--json",
                         "--model", "llamacpp_server:smollm2", "--base-url", llama_server, cwd=tmp_path,
                         RLM_PLUGINS="rlm-sandbox-monty,rlm-provider-compatible",
                         RLM_PROVIDER__LLAMACPP_SERVER__CONTEXT_WINDOW="4096")  # the server's n_ctx
    assert result.returncode in (0, 1), result.stderr[-2000:]
    steps = steps_of(json.loads(result.stdout), tmp_path)
    assert len(steps) == 2 and all(code_or_final(step["reply"]) for step in steps), [s["reply"] for s in steps]
