"""The run loop end to end: a scripted root and sub model, the real process sandbox, real trajectories."""

from __future__ import annotations

import json
import threading

import pytest

from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.models.protocol import ModelError
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.testing.engine import FIND_NEEDLE, assert_context_stays_out_of_the_prompt, haystack, isolated_runner
from rlm_host.testing.engine import run_scripted as run  # (runner, task, root replies, *, sub, sub_rules, context)
from rlm_host.testing.engine import trajectory


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return isolated_runner(tmp_path, sandbox="process")


# ---------------------------------------------------------------- the main path


def test_finds_the_needle_with_a_sub_call(runner):
    result, events, root = run(
        runner, "What is the magic number?", [FIND_NEEDLE, "FINAL_VAR(answer)"],
        sub_rules=[{"match": "Extract the number", "text": "4217"}], context=haystack(200_000),
    )
    assert result.completed and result.final_response == "4217"
    assert result.termination_reason == "final" and result.steps == 2
    assert result.usage.root.calls == 2 and result.usage.sub.calls == 1
    assert result.usage.root.input_tokens > 0 and result.usage.sub.output_tokens > 0
    assert result.total_reward == pytest.approx(0.8 + 1.0)
    types = [e["type"] for e in trajectory(result) if e["type"] not in LIVE_EVENT_TYPES]  # tests/test_live_events.py
    assert types == ["run_start", "sub_call", "step", "step", "final"]
    assert [e.type for e in events if e.type not in LIVE_EVENT_TYPES] == types


def test_context_never_enters_the_root_prompt_and_prompt_size_is_flat(runner):
    assert_context_stays_out_of_the_prompt(runner)


def test_list_and_json_contexts(runner):
    docs = ["first doc", "second doc mentions 4217"]
    result, _, _ = run(runner, "Which doc?",
                       ["```repl\nprint(len(context), list_files())\nFINAL(load_file('document_1'))\n```"],
                       context=docs)
    assert result.final_response == "second doc mentions 4217"
    result, _, _ = run(runner, "Key?", ["```repl\nFINAL(context['a']['b'])\n```"], context={"a": {"b": [1, 2]}})
    assert result.final_response == "[1, 2]"


# ---------------------------------------------------------------- termination paths


def test_final_written_in_text_ends_the_run_but_a_mention_does_not(runner):
    result, _, _ = run(runner, "q", [
        "```repl\nprint(context[:5])\n```\nI will use FINAL(x) when I know.",
        "The answer is below.\nFINAL(hello world)",
    ], context="hello world")
    assert result.steps == 2 and result.final_response == "hello world"


def test_submit_ends_the_run_with_fields(runner):
    result, _, _ = run(runner, "q", ["```repl\nSUBMIT(answer='a', confidence=0.9)\n```"], context="x")
    assert json.loads(result.final_response) == {"answer": "a", "confidence": 0.9}
    result, _, _ = run(runner, "q", ["```repl\nSUBMIT(answer='only')\n```"], context="x")
    assert result.final_response == "only"


def test_final_var_of_a_missing_variable_is_an_error_observation(runner):
    result, events, root = run(runner, "q",
                               ["```repl\nprint(1)\n```\nFINAL_VAR(nothing_here)", "```repl\nx = 'ok'\n```",
                                             "FINAL_VAR(x)"], context="c")
    assert result.final_response == "ok" and result.steps == 3
    first = [e for e in events if e.type == "step"][0].data
    assert not first["action"] == "final"
    assert "no variable named 'nothing_here'" in " ".join(first["observation"]["notes"])
    assert "no variable named 'nothing_here'" in root.calls[1][-1]["content"]


def test_first_turn_answer_without_looking_gets_one_nudge(runner):
    result, events, root = run(runner, "q", ["FINAL(a guess)", "FINAL(a guess)"], context="data")
    assert result.steps == 2 and result.final_response == "a guess"
    assert "without examining `context`" in root.calls[1][-1]["content"]


def test_max_steps_synthesises_an_answer_with_one_extra_call(runner):
    result, _, root = run(runner, "q", ["```repl\nprint(1)\n```"] * 3 + ["best guess: 7"], context="c", max_steps=3)
    assert not result.completed and result.termination_reason == "max_steps"
    assert result.final_response == "best guess: 7"
    assert len(root.calls) == 4 and "used all your steps" in root.calls[-1][-1]["content"]
    assert trajectory(result)[-1]["data"]["termination_reason"] == "max_steps"


def test_timeout_stops_the_run_and_records_it(runner):
    slow = {"text": "```repl\nprint(1)\n```", "delay": 0.6}
    result, _, _ = run(runner, "q", [slow] * 5, context="c", timeout=1.0)
    assert result.termination_reason == "timeout" and not result.completed
    assert trajectory(result)[-1]["type"] == "final"


def test_token_budget_stops_the_run(runner):
    step = {"text": "```repl\nprint(1)\n```", "input_tokens": 600, "output_tokens": 10}
    result, _, _ = run(runner, "q", [step] * 5, context="c", max_tokens=1000)
    assert result.termination_reason == "budget" and result.steps == 2


def test_max_llm_calls_refuses_sub_calls_inside_the_repl_then_ends_the_run(runner):
    code = "```repl\nout = []\nfor i in range(3):\n    out.append(llm_query('q' + str(i)))\nprint(out)\n```"
    result, events, _ = run(runner, "q", [code, "my answer"], sub_rules=[{"match": ".", "text": "a"}],
                            context="c", max_llm_calls=2)
    assert result.termination_reason == "max_llm_calls" and result.usage.sub.calls == 2
    step = [e for e in events if e.type == "step"][0].data
    assert "max_llm_calls (2) reached" in step["observation"]["blocks"][0]["error"]
    assert result.final_response == "my answer"  # synthesised


def test_cancellation_from_another_thread(runner):
    cancel = threading.Event()
    steps = [{"text": "```repl\nprint(1)\n```", "delay": 0.2}] * 20
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    result, _, _ = run(runner, "q", steps, context="c", cancel=cancel)
    timer.cancel()
    assert result.termination_reason == "cancelled" and 1 <= result.steps < 20


def test_ctrl_c_finishes_cleanly_and_writes_the_final_event(runner):
    class Interrupting(ScriptedConnector):
        def complete(self, messages, *, timeout=None, **kw):
            if len(self.calls) == 1:
                raise KeyboardInterrupt
            return super().complete(messages, timeout=timeout)

    root = Interrupting(["```repl\nprint(1)\n```", "never"], name="scripted:root")
    result = runner.run_task("q", context="c", sandbox="process", connectors={"root": root})
    assert result.termination_reason == "cancelled" and result.steps == 1
    assert trajectory(result)[-1]["data"]["termination_reason"] == "cancelled"


def test_model_outage_is_recorded_as_an_error(runner):
    result, _, _ = run(runner, "q", ["```repl\nprint(1)\n```", {"error": "HTTP 503 after 5 attempts"}], context="c")
    assert result.termination_reason == "error" and "HTTP 503" in result.error
    events = trajectory(result)
    assert [e["type"] for e in events][-2:] == ["error", "final"]


# ---------------------------------------------------------------- malformed replies


@pytest.mark.parametrize("reply", [{"text": None}, {"text": ""}, "   "])
def test_empty_or_null_content_is_recorded_and_the_run_goes_on(runner, reply):
    result, events, root = run(runner, "q", [reply, "```repl\nFINAL('done')\n```"], context="c")
    assert result.final_response == "done" and result.steps == 2
    first = [e for e in events if e.type == "step"][0].data
    assert first["action"] == "malformed_reply" and first["reward"] < 0


def test_reply_without_code_gets_instructions(runner):
    result, events, root = run(runner, "q", ["Let me think about it.", "```repl\nFINAL('x')\n```"], context="c")
    assert result.completed and "no ```repl code block" in root.calls[1][-1]["content"]


def test_unclosed_fence_still_runs_and_says_so(runner):
    result, events, root = run(runner, "q", ["```repl\nv = len(context)\nprint(v)", "FINAL_VAR(v)"], context="abc")
    assert result.final_response == "3"
    assert "not closed" in root.calls[1][-1]["content"]


# ---------------------------------------------------------------- sub-calls and recursion


def test_a_failing_sub_call_raises_inside_the_repl(runner):
    code = "```repl\ntry:\n    llm_query('x')\nexcept RuntimeError as e:\n    print('caught:', e)\n```"
    result, events, _ = run(runner, "q", [code, "FINAL(ok)"], sub=[{"error": "HTTP 500 after 3 attempts"}], context="c")
    step = [e for e in events if e.type == "step"][0].data
    assert "caught: llm_query failed: HTTP 500 after 3 attempts" in step["observation"]["blocks"][0]["stdout"]
    sub_call = [e for e in events if e.type == "sub_call"][0].data
    assert sub_call["error"] == "HTTP 500 after 3 attempts"


def test_batched_sub_calls_keep_order(runner):
    code = ("```repl\nanswers = llm_query_batched(['say ' + str(i) for i in range(6)])\nprint(answers)\n"
            "FINAL_VAR('answers')\n```")
    rules = [{"match": f"say {i}", "text": f"A{i}", "delay": 0.05 * (6 - i)} for i in range(6)]
    result, events, _ = run(runner, "q", [code], sub_rules=rules, context="c")
    assert json.loads(result.final_response) == [f"A{i}" for i in range(6)]
    assert len([e for e in events if e.type == "sub_call"]) == 6


def test_a_steps_model_seconds_count_a_sub_model_named_by_the_code(runner, tmp_path):
    (tmp_path / "other.json").write_text(json.dumps([{"text": "slow", "delay": 0.4}]))
    code = "```repl\nr = llm_query('hi', model='scripted:other.json')\nFINAL_VAR('r')\n```"
    result, events, _ = run(runner, "q", [code], context="c", allowed_sub_models=["scripted:other.json"])
    assert result.final_response == "slow"
    assert [e.data["model_seconds"] for e in events if e.type == "step"][0] >= 0.4


def test_rlm_query_runs_a_child_one_level_deeper(runner):
    parent_code = "```repl\nr = rlm_query('Count the words', context='a b c')\nprint(r)\nFINAL_VAR('r')\n```"
    child_reply = "```repl\nFINAL(str(len(context.split())))\n```"
    root = ScriptedConnector.from_responses([parent_code], rules=[{"match": "Count the words", "text": child_reply}])
    events = []
    result = runner.run_task("q", context="ctx", sandbox="process", connectors={"root": root}, on_event=events.append)
    assert result.final_response == "3"
    child_final = [e for e in events if e.type == "final" and e.depth == 1][0]
    assert child_final.parent_run_id == result.run_id
    assert result.usage.sub.calls == child_final.data["usage"]["root"]["calls"] == 1


def test_rlm_query_at_max_depth_is_a_plain_llm_query(runner):
    code = "```repl\nr = rlm_query('sub question')\nFINAL_VAR('r')\n```"
    result, events, _ = run(runner, "q", [code], sub_rules=[{"match": "sub question", "text": "plain"}], context="c",
                            max_depth=0)
    assert result.final_response == "plain"
    assert [e.data["kind"] for e in events if e.type == "sub_call"] == ["rlm_query(max_depth: plain llm_query)"]


# ---------------------------------------------------------------- the sandbox under the loop


def test_worker_crash_mid_run_is_reported_and_the_run_goes_on(runner):
    result, events, root = run(runner, "q", ["```repl\nimport os\nos._exit(3)\n```",
                                             "```repl\nFINAL(str(len(context)))\n```"], context="abcd")
    assert result.final_response == "4"
    block = [e for e in events if e.type == "step"][0].data["observation"]["blocks"][0]
    assert block.get("restarted")


def test_history_compaction_keeps_the_last_turns(runner, tmp_path):
    compacting = isolated_runner(tmp_path, sandbox="process", host=runner.host,
                                 environ={"RLM_ENVIRONMENT__PURE_RLM__CONTEXT_WINDOW": "1024",
                                          "RLM_ENVIRONMENT__PURE_RLM__KEEP_LAST_TURNS": "1"})
    noisy = "Thinking aloud: " + "x" * 3000 + "\n```repl\nprint('x' * 3000)\n```"  # replies are kept whole
    root = ScriptedConnector.from_responses([noisy, noisy, noisy, "FINAL(done)"],
                                            rules=[{"match": "Summarise the work so far",
                                                    "text": "SUMMARY-1"}])
    events = []
    result = compacting.run_task("q", context="c", sandbox="process", connectors={"root": root}, on_event=events.append)
    assert result.completed
    assert any(e.type == "compaction" for e in events)
    last_prompt = root.calls[-1]
    assert any("SUMMARY-1" in m["content"] for m in last_prompt)


# ---------------------------------------------------------------- rewards


def test_global_scale_scales_every_step(tmp_path, monkeypatch):
    """``[rewards] global_scale`` multiplies each step's clamped reward (generic's 0.8, -0.2 and 1.0, halved)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rlm.toml").write_text("[rewards]\nglobal_scale = 0.5\n")
    replies = [
        json.dumps({"action": "run_python", "code": "print(6 * 7)"}),
        json.dumps({"action": "run_python", "code": "1/0"}),
        json.dumps({"action": "final", "final_response": "42"}),
    ]
    generic = isolated_runner(tmp_path, sandbox="process", plugins="rlm-env-generic")  # generic is a plugin
    _, events, _ = run(generic, "compute", replies, environment="generic")
    steps = [e.data for e in events if e.type == "step"]
    assert [s["reward"] for s in steps] == pytest.approx([0.4, -0.1, 0.5])
    assert steps[-1]["cumulative_reward"] == pytest.approx(0.8)


def test_unknown_names_fail_before_any_model_call(runner):
    from rlm_host.errors import ConfigError, UnknownComponentError

    with pytest.raises(UnknownComponentError, match="unknown environment 'pure'"):
        run(runner, "q", ["x"], environment="pure")
    with pytest.raises(UnknownComponentError, match="unknown framework 'dspy'"):
        run(runner, "q", ["x"], framework="dspy")
    with pytest.raises(ConfigError, match="no secure sandbox"):
        run(runner, "q", ["x"], sandbox="auto")
    with pytest.raises(ConfigError, match="max_steps"):
        run(runner, "q", ["x"], max_steps=0)


def test_scripted_model_errors_are_model_errors():
    with pytest.raises(ModelError):
        ScriptedConnector.from_responses([]).complete([{"role": "user", "content": "x"}])


def test_block_output_is_capped_to_a_tenth_of_a_small_window(runner, tmp_path):
    small = isolated_runner(tmp_path, sandbox="process", host=runner.host,
                            environ={"RLM_ENVIRONMENT__PURE_RLM__CONTEXT_WINDOW": "2048"})
    root = ScriptedConnector.from_responses(["```repl\nprint('y' * 50000)\n```", "FINAL(ok)"])
    small.run_task("q", context="c", sandbox="process", connectors={"root": root})
    fed_back = root.calls[1][-1]["content"]
    assert 800 < len(fed_back) < 1000 and "characters cut" in fed_back


def test_the_summarising_call_fits_the_window_even_when_the_history_does_not():
    from rlm_host.environments.pure_rlm.history import History

    history = History({"role": "system", "content": "s" * 2000}, {"role": "user", "content": "task"})
    history.add_turn("r" * 20000, "o" * 20000)
    assert history.needs_compaction(context_window=4096, threshold=0.85)
    seen = []
    before, after = history.compact(lambda messages: seen.append(messages) or "S", 4, context_window=4096)
    assert (before, after) == (1, 0) and history.summary == "S"
    assert sum(len(m["content"]) for m in seen[0]) <= 0.7 * 4096 * 4 + 100


class _CountingModel:
    """A sub-model that answers after a pause and records how many of its calls were in flight at once."""

    name = "counting:sub"
    context_window = None

    def __init__(self, max_concurrency=None):
        import threading

        self.max_concurrency = max_concurrency
        self.lock, self.in_flight, self.peak = threading.Lock(), 0, 0

    def complete(self, messages, **_):
        import time

        from rlm_host.models.protocol import Completion

        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(0.05)
        with self.lock:
            self.in_flight -= 1
        return Completion(text="ok", model=self.name, input_tokens=1, output_tokens=1, seconds=0.05)


@pytest.mark.parametrize("calls, limit, peak", [(20, None, 20), (40, None, 32), (12, 3, 3), (5, 1, 1)])
def test_a_batch_runs_its_calls_together_up_to_the_cap_and_the_provider_limit(runner, calls, limit, peak):
    code = f"```repl\nanswers = llm_query_batched(['q' + str(i) for i in range({calls})])\nFINAL(len(answers))\n```"
    sub = _CountingModel(limit)
    root = ScriptedConnector.from_responses([code])
    result = runner.run_task("q", context="c", sandbox="process", connectors={"root": root, "sub": sub})
    assert result.final_response == str(calls)
    assert sub.peak == peak, f"{sub.peak} calls were in flight at once, expected {peak}"
