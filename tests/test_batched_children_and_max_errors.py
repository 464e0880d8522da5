"""``rlm_query_batched`` (child runs at once, sharing the run tree's budget and depth) and ``[run] max_errors``
(a run that keeps failing stops with the best answer so far)."""

from __future__ import annotations

import json
import threading
import time

from rlm_host.testing.engine import isolated_runner, run_scripted
from rlm_host.models.protocol import Completion

BATCH = "```repl\nanswers = rlm_query_batched(['first part', 'second part'], ['ctx-a', 'ctx-b'])\nprint(answers)\n```"


class _ChildModel:
    """A root model for the parent (first reply) and its children (each answers from its own context), counting
    children in flight."""

    name, provider, context_window, max_concurrency = "test:tree", "test", 100_000, None

    def __init__(self) -> None:
        self.lock, self.running, self.peak, self.calls = threading.Lock(), 0, 0, []

    def complete(self, messages, **_):
        text = messages[-1]["content"]
        self.calls.append(text)
        if len(self.calls) == 1:
            return Completion(text=BATCH, input_tokens=10, output_tokens=5)
        if "answers" in json.dumps(messages) and "['child" in json.dumps(messages):
            return Completion(text="FINAL_VAR(answers)", input_tokens=10, output_tokens=5)
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(0.3)
        with self.lock:
            self.running -= 1
        which = "a" if "first part" in json.dumps(messages) else "b"
        return Completion(text=f"FINAL(child {which})", input_tokens=10, output_tokens=5)


def test_rlm_query_batched_runs_children_at_once_and_answers_in_order(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    model = _ChildModel()
    events = []
    result = runner.run_task("q", connectors={"root": model, "sub": model}, sandbox="monty", on_event=events.append)
    assert result.final_response == '["child a", "child b"]', result.error
    assert model.peak == 2, "the two children ran at the same time"
    children = [e.data for e in events if e.type == "child_run_start"]
    assert len(children) == 2 and all(c["depth"] == 1 for c in children)


def test_rlm_query_batched_at_max_depth_falls_back_like_rlm_query(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    result, events, _ = run_scripted(runner, "q", [BATCH, "FINAL_VAR(answers)"], sub=["plain a", "plain b"],
                                     max_depth=0, sandbox="monty")
    assert sorted(json.loads(result.final_response)) == ["plain a", "plain b"]
    assert not [e for e in events if e.type == "child_run_start"]


def test_bad_arguments_are_exceptions_in_the_code(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    code = "```repl\ntry:\n    rlm_query_batched(['a'], ['x', 'y'])\nexcept Exception as exc:\n    why = str(exc)\n```"
    result, _, _ = run_scripted(runner, "q", [code, "FINAL_VAR(why)"], sandbox="monty")
    assert "contexts must be a list as long as prompts" in result.final_response


def test_max_errors_stops_a_run_that_keeps_failing_with_a_synthesised_answer(tmp_path):
    runner = isolated_runner(tmp_path, plugins="rlm-sandbox-monty")
    failing = "```repl\n1/0\n```"
    fine = "```repl\nprint(1)\n```"
    result, events, root = run_scripted(runner, "q", [failing, fine, failing, failing, "best guess"], max_errors=2,
                                        max_steps=8, sandbox="monty")
    assert result.termination_reason == "max_errors" and result.steps == 4  # the success in between reset it
    assert result.final_response == "best guess" and not result.completed
    result, _, _ = run_scripted(runner, "q", [failing, failing, failing, "FINAL(done)"], max_steps=4, sandbox="monty")
    assert result.termination_reason == "final"  # no limit by default
