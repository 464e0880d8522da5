"""The ``replay`` provider: a saved run's model answers replayed through the real engine and the real CLI,
in another sandbox, with sub-calls (batched, long), child runs and compaction; and the exhaustion error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlm_host import ModelError, ProviderServices
from rlm_host.sdk.embedding import PluginHost, RLMRunner, RunStore, load_settings
from rlm_host.testing import ScriptedConnector
from rlm_runs.provider import Recording, ReplayConnector, create, ordinal

NEEDLE = "The magic number is 4217."
CONTEXT = "lorem ipsum " * 2000 + NEEDLE + " dolor sit amet" * 2000
LONG = "x" * 1500  # longer than the 500 characters a sub_call event shows

ROOT = [
    # a child run (it answers with the next root reply), then concurrent and long sub-calls
    "```repl\nidx = context.find('magic number')\nsnippet = context[idx:idx+40]\n"
    "child = rlm_query('Repeat this: ' + snippet)\n"
    "answers = llm_query_batched(['A: ' + snippet, 'B: ' + snippet, 'C: ' + snippet])\n"
    "long = llm_query('Long: ' + snippet)\nprint(child, answers, len(long))\n```",
    "FINAL(child says 4217)",  # the child run's only step
    "```repl\nanswer = answers[0] + '/' + answers[1] + answers[2] + '/' + str(len(long)) + '/' + child\n```",
    "FINAL_VAR(answer)",
]
SUB_RULES = [{"match": "^A:", "text": "4217"}, {"match": "^B:", "text": "b"}, {"match": "^C:", "text": "c"},
             {"match": "^Long:", "text": LONG}]
ANSWER = "4217/bc/1500/child says 4217"


def make_runner(tmp_path: Path, plugins: str = "", environ: dict | None = None) -> RLMRunner:
    host = PluginHost(environ={"RLM_PLUGINS": plugins})
    loaded = load_settings(environ={"HOME": str(tmp_path), **(environ or {})}, cwd=tmp_path, host=host)
    return RLMRunner(loaded=loaded, host=host, home=tmp_path / ".rlm")


def record(tmp_path: Path, **options):
    root = ScriptedConnector.from_responses(ROOT, name="scripted:root")
    sub = ScriptedConnector.from_responses([], rules=SUB_RULES, name="scripted:sub")
    return make_runner(tmp_path).run_task("What is the magic number?", context=CONTEXT, sandbox="process",
                                          connectors={"root": root, "sub": sub}, **options)


def events_of(result) -> list[dict]:
    return [json.loads(line) for line in Path(result.trajectory_path).read_text().splitlines()]


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = record(tmp_path)
    assert result.completed and result.final_response == ANSWER, result.error
    return result


def test_sub_call_events_keep_the_full_response_and_a_prompt_digest(recorded):
    calls = [e["data"] for e in events_of(recorded) if e["type"] == "sub_call" and e["data"]["kind"] != "rlm_query"]
    assert len(calls) == 4 and all(len(c["prompt_hash"]) == 16 for c in calls)
    long = next(c for c in calls if c["prompt"].startswith("Long:"))
    assert long["response_full"] == LONG and len(long["response"]) < len(LONG)
    assert all("response_full" not in c for c in calls if c is not long)


def test_recording_holds_root_replies_depth_first_and_the_sub_responses(recorded, tmp_path):
    recording = Recording.from_events(RunStore(tmp_path / ".rlm").load(recorded.run_id))
    assert [r.text for r in recording.root] == ROOT  # the child's reply between its parent's steps
    assert sorted(r.text for r in recording.sub) == sorted(["4217", "b", "c", LONG])
    assert recording.model == "scripted:root" and recording.outcome == "final"


@pytest.mark.parametrize("sandbox, plugins", [("process", ""), ("monty", "rlm-sandbox-monty")])
def test_replay_through_the_engine_reproduces_the_run(recorded, tmp_path, sandbox, plugins):
    home = tmp_path / ".rlm"
    replay = create(None, ProviderServices(home=home, model=recorded.run_id[:-3]))  # a unique prefix
    runner = make_runner(tmp_path, plugins)
    result = runner.run_task("What is the magic number?", context=CONTEXT, sandbox=sandbox,
                             connectors={"root": replay, "sub": replay})
    assert result.completed, result.error
    assert result.final_response == ANSWER and result.steps == recorded.steps == 3
    assert result.sandbox == sandbox and result.model == f"replay:{recorded.run_id}"
    assert result.usage.root.input_tokens == recorded.usage.root.input_tokens
    assert result.usage.sub.output_tokens == recorded.usage.sub.output_tokens
    assert result.cost == 0.0


def test_asking_for_more_than_was_recorded_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = ScriptedConnector.from_responses(["```repl\nprint(1)\n```", "```repl\nprint(2)\n```", "my best guess"])
    short = make_runner(tmp_path).run_task("q", context="c", sandbox="process", connectors={"root": root}, max_steps=2)
    assert short.termination_reason == "max_steps" and short.final_response == "my best guess"

    replay = create(None, ProviderServices(home=tmp_path / ".rlm", model="latest"))
    assert [r.text for r in replay.recording.root][-1] == "my best guess"  # the synthesised answer is replayed
    runner = make_runner(tmp_path)
    result = runner.run_task("q", context="c", sandbox="process", connectors={"root": replay}, max_steps=5)
    assert result.termination_reason == "error" and not result.completed
    expected = f"replay of {short.run_id}: the recorded run had 3 root replies; this run asked for a 4th"
    assert result.error == expected
    types = [e["type"] for e in events_of(result)]
    assert "error" in types and types[-1] == "final"


def test_the_connector_counts_and_names_what_ran_out():
    recording = Recording("run_x", root=[], sub=[])
    connector = ReplayConnector(recording)
    with pytest.raises(ModelError, match=r"^replay of run_x: the recorded run had 0 root replies; this run asked "
                                          r"for a 1st$"):
        connector.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    with pytest.raises(ModelError, match="had 0 sub-call responses; this run asked for a 1st"):
        connector.complete([{"role": "user", "content": "a sub-call"}])
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]


def test_a_recorded_sub_call_failure_fails_again(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = "```repl\ntry:\n    llm_query('boom')\nexcept Exception as e:\n    print('caught', e)\nFINAL('done')\n```"
    sub = ScriptedConnector.from_responses([{"error": "upstream said no"}])
    original = make_runner(tmp_path).run_task("q", context="c", sandbox="process",
                                              connectors={"root": ScriptedConnector.from_responses([code]), "sub": sub})
    replay = create(None, ProviderServices(home=tmp_path / ".rlm", model=original.run_id))
    events = []
    result = make_runner(tmp_path).run_task("q", context="c", sandbox="process", connectors={"root": replay},
                                            on_event=events.append)
    assert result.final_response == "done"
    (call,) = [e.data for e in events if e.type == "sub_call"]
    assert call["error"] == "upstream said no"


def test_compaction_summaries_are_replayed_when_the_settings_force_compaction(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = {"RLM_ENVIRONMENT__PURE_RLM__CONTEXT_WINDOW": "1024", "RLM_ENVIRONMENT__PURE_RLM__KEEP_LAST_TURNS": "1"}
    noisy = "Thinking aloud: " + "x" * 3000 + "\n```repl\nprint('x' * 3000)\n```"  # replies are kept whole
    rules = [{"match": "Summarise the work so far", "text": "SUMMARY"}]
    root = ScriptedConnector.from_responses([noisy, noisy, noisy, "FINAL(done)"], rules=rules)
    original = make_runner(tmp_path, environ=settings).run_task("q", context="c", sandbox="process",
                                                                connectors={"root": root})
    summaries = [e for e in events_of(original) if e["type"] == "compaction"]
    assert original.completed and summaries
    replay = create(None, ProviderServices(home=tmp_path / ".rlm", model=original.run_id))
    events = []
    result = make_runner(tmp_path, environ=settings).run_task("q", context="c", sandbox="process",
                                                              connectors={"root": replay}, on_event=events.append)
    assert result.final_response == "done" and result.steps == original.steps
    assert [e.data["summary"] for e in events if e.type == "compaction"] == [s["data"]["summary"] for s in summaries]


# ---------------------------------------------------------------- the CLI


def test_rlm_run_with_replay_reproduces_the_final_answer_in_another_sandbox(rlm_cli, rlm_isolated):
    work = rlm_isolated.work
    (work / "hay.txt").write_text(CONTEXT)
    (work / "root.json").write_text(json.dumps({"responses": ROOT}))
    (work / "sub.json").write_text(json.dumps({"responses": [], "rules": SUB_RULES}))
    task = ["run", "What is the magic number?", "--context", "hay.txt"]

    done = rlm_cli(*task, "--model", "scripted:root.json", "--sub-model", "scripted:sub.json", "--sandbox",
                   "process", "--json", plugins="rlm-sandbox-monty")
    assert done.code == 0, done.err
    original = json.loads(done.out)
    assert original["final_response"] == ANSWER

    for ref in (original["run_id"], original["trajectory_path"]):  # an id, then a path to the .jsonl
        done = rlm_cli(*task, "--model", f"replay:{ref}", "--sub-model", f"replay:{ref}", "--sandbox", "monty",
                       "--json", plugins="rlm-sandbox-monty")
        assert done.code == 0, done.err
        replayed = json.loads(done.out)
        assert replayed["final_response"] == original["final_response"]
        assert replayed["sandbox"] == "monty" and replayed["model"] == f"replay:{original['run_id']}"
        assert replayed["cost"] == 0.0 and "$0.0000" in done.err  # the live view's last line shows the cost


def test_rlm_run_with_an_unknown_replay_id_is_one_clear_error(rlm_cli):
    done = rlm_cli("run", "q", "--model", "replay:nope", "--sandbox", "process")
    assert done.code == 2 and "error: no saved run matches 'nope'" in done.err and "Traceback" not in done.err
