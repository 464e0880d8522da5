"""``ToolAgentScenarios``: the runs every framework over a tool-calling agent framework must get right, and the
kit its own tests use. Such frameworks (pydantic-ai, google-adk, deepagents…) give their agent the run's sandbox as
the tools ``run_code`` / ``llm_query`` over a text-only model speaking the text tool protocol, so one scripted model
drives them all the same way::

    from rlm_host.testing import ToolAgentScenarios


    class TestMyAgentScenarios(ToolAgentScenarios):
        framework = "my-agent"
        distribution = "rlm-adapter-mine"

The scenarios, through ``rlm run --json``: two looks at a station log (an ``llm_query`` inside the first code) then
the answer, in the process sandbox and any other named (``other_sandboxes``), with the exact steps, rewards and
usage; ``max_steps`` stopping after that many root turns; ``FINAL()`` in code ending the run, also in the last
allowed turn; failing code as a tool error the model sees; the ``llm_query`` tool and the sub-call budget; the context
staying in the sandbox.

``UserToolScenarios`` (subclassed the same way) checks the user's own functions (``tools=[fn]``, ``--tool``) as the
agent's tools and the run's answer type (``output_type``): a tool called with the model's arguments, its result and
its exception shown to the model, each call a ``tool_call`` sub-call of the trajectory, a name of the framework's own
refused; an answer of the wrong type sent back, the right one in ``RunResult.output``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pytest

from rlm_host.testing.engine import HAYSTACK_NEEDLE, haystack, isolated_runner, run_scripted, trajectory

LOG = "Station log\nday 116: sensor A ok\nday 117: sensor B FAILED, last reading 42.7\nday 118: sensor A ok\n"
QUESTION = "Which sensor failed on day 117, and what did it read?"
#: the sub-model's answer to llm_query, for prompts starting so (never a root prompt: those start otherwise)
SUB_RULES = [{"match": "^Extract the sensor", "text": "sensor B, 42.7"}]
FIRST_LOOK = ("lines = context.splitlines()\nprint(len(lines))\nhit = [l for l in lines if 'FAILED' in l][0]\n"
              "print(llm_query('Extract the sensor and reading: ' + hit))")
ANSWER = "Sensor B failed on day 117; its last reading was 42.7."
#: RLM Code's rewards ([rewards] defaults) of a tool call, a tool result, a tool error, a retry, model text, final
TOOL_CALL, TOOL_RESULT, TOOL_ERROR, RETRY, MODEL_TEXT, FINAL = 0.02, 0.06, -0.05, -0.05, 0.05, 1.0


def call(tool: str, **args: object) -> str:
    """A scripted reply calling ``tool`` in the text tool protocol."""
    return json.dumps({"tool": tool, "args": args})


def final(answer: object) -> str:
    """A scripted reply giving the final answer in the text tool protocol."""
    return json.dumps({"final": answer})


def write_station_log(folder: Path) -> Path:
    path = folder / "station_log.txt"
    path.write_text(LOG)
    return path


def run_framework(rlm_cli: Any, model: str, context: Path, *extra: str, framework: str, plugins: str,
                  sandbox: str = "process") -> tuple[Any, dict, list[dict], list[dict]]:
    """``rlm run QUESTION --framework … --json``: (the CLI result, the run JSON, the step events' data, every
    trajectory event)."""
    result = rlm_cli("run", QUESTION, "--framework", framework, "--context", str(context), "--model", model,
                     "--sandbox", sandbox, "--json", *extra, plugins=plugins)
    assert result.out.strip(), result.err
    outcome = json.loads(result.out)
    events = [json.loads(line) for line in (context.parent / outcome["trajectory_path"]).read_text().splitlines()]
    steps = [event["data"] for event in events if event["type"] == "step"]
    return result, outcome, steps, events


def actions(steps: list[dict]) -> list[tuple[str, float]]:
    return [(step["action"], step["reward"]) for step in steps]


class ToolAgentScenarios:
    """Subclass in a ``Test…`` class and set ``framework`` and ``distribution`` (see the module docstring)."""

    framework: str = ""
    distribution: str = ""
    #: loggers (name prefixes) that must log no warning when a run stops on purpose at max_steps
    quiet_loggers: tuple[str, ...] = ()
    #: an upper bound on the first root prompt's size, when the framework promises one
    max_first_prompt_chars: Optional[int] = None
    #: (sandbox name, the distribution registering it): the two-looks run again in each
    other_sandboxes: tuple[tuple[str, str], ...] = ()

    @pytest.fixture
    def log_file(self, rlm_isolated: Any) -> Path:
        return write_station_log(rlm_isolated.work)

    def run(self, rlm_cli: Any, model: str, context: Path, *extra: str, **options: Any) -> tuple:
        options.setdefault("plugins", self.distribution)
        return run_framework(rlm_cli, model, context, *extra, framework=self.framework, **options)

    def assert_two_looks_then_the_answer(self, outcome: dict, steps: list[dict], events: list[dict],
                                         sandbox: str) -> None:
        assert outcome["framework"] == self.framework and outcome["sandbox"] == sandbox
        assert outcome["completed"] and outcome["termination_reason"] == "final" and outcome["error"] is None
        assert outcome["final_response"] == ANSWER
        assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("tool_call", TOOL_CALL),
                                  ("tool_result", TOOL_RESULT), ("final", FINAL)]
        reward = 2 * TOOL_CALL + 2 * TOOL_RESULT + FINAL
        assert outcome["steps"] == 5 and outcome["total_reward"] == pytest.approx(reward)
        first_call, first_result, second_call, second_result, answer = steps
        assert first_call["code"] == FIRST_LOOK and first_call["observation"]["tool"] == "run_code"
        assert first_call["observation"] == {"tool": "run_code", "args": {"code": FIRST_LOOK}}
        assert first_call["reply"] == call("run_code", code=FIRST_LOOK)  # the model's exact text
        assert first_result["observation"]["ok"] and first_result["observation"]["output"] == "4\nsensor B, 42.7"
        assert second_result["observation"]["output"] == "day 117: sensor B FAILED, last reading 42.7"
        assert answer["observation"] == {"answer": ANSWER} and answer["reply"] == final(ANSWER)
        # root tokens: three model calls; sub tokens: the llm_query inside the first code, in that code's step
        usage = outcome["usage"]
        assert usage["root"]["calls"] == 3 and usage["root"]["input_tokens"] > 0 and usage["root"]["output_tokens"] > 0
        assert usage["sub"]["calls"] == 1 and usage["sub"]["input_tokens"] > 0
        assert first_result["usage"]["sub"]["calls"] == 1 and first_call["usage"]["root"]["calls"] == 1
        assert sum(step["usage"]["root"]["input_tokens"] for step in steps) == usage["root"]["input_tokens"]
        sub_calls = [event["data"] for event in events if event["type"] == "sub_call"]
        assert [(s["kind"], s["response"]) for s in sub_calls] == [("llm_query", "sensor B, 42.7")]
        assert events[-1]["type"] == "final"

    # ------------------------------------------------------------------ the scenarios

    def test_a_run_in_the_process_sandbox(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"), final(ANSWER)],
                           rules=SUB_RULES)
        result, outcome, steps, events = self.run(rlm_cli, model, log_file)
        assert result.code == 0, result.err
        self.assert_two_looks_then_the_answer(outcome, steps, events, "process")

    def test_the_same_run_in_other_sandboxes(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        if not self.other_sandboxes:
            pytest.skip("no other sandbox named (other_sandboxes)")
        for sandbox, distribution in self.other_sandboxes:
            model = rlm_script([call("run_code", code=FIRST_LOOK), call("run_code", code="print(hit)"),
                                final(ANSWER)], rules=SUB_RULES)
            result, outcome, steps, events = self.run(rlm_cli, model, log_file, sandbox=sandbox,
                                                      plugins=f"{self.distribution},{distribution}")
            assert result.code == 0, result.err
            self.assert_two_looks_then_the_answer(outcome, steps, events, sandbox)

    def test_a_long_run_stays_inside_a_small_window(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        """The framework's history is folded into a summary (a ``compaction`` call, not a turn) whenever it nears the
        model's window, so a 40-turn run of big tool results stays inside an 8K window and reaches its answer."""
        big = call("run_code", code="print(context * 60)")  # each result ≈ 1.5K tokens; the window is 8K
        model = rlm_script([big] * 39 + [final(ANSWER)], context_window=8192,
                           rules=[{"match": "Summarise the work so far", "text": "The log was printed; B failed."}])
        result, outcome, steps, events = self.run(rlm_cli, model, log_file, "--max-steps", "40",
                                                  "--max-llm-calls", "200")
        assert outcome["completed"] and outcome["final_response"] == ANSWER, (outcome, result.err)
        folds = [e for e in events if e["type"] == "compaction"]
        assert folds and all(f["data"]["summary"] == "The log was printed; B failed." for f in folds)
        purposes = [e["data"]["purpose"] for e in events if e["type"] == "model_call_start" and e["depth"] == 0]
        assert purposes.count("turn") == 40 and purposes.count("compaction") == len(folds) >= 3
        prompts = [e["data"]["input_tokens"] for e in events if e["type"] == "model_call_end" and e["depth"] == 0]
        assert max(prompts) < 8192  # a 40-turn run stayed inside the window

    def test_max_steps_stops_the_run_cleanly_with_its_trajectory(self, rlm_cli: Any, rlm_script: Any,
                                                                 log_file: Path, caplog: Any) -> None:
        model = rlm_script([call("run_code", code="print(len(context))")] * 6)
        result, outcome, steps, events = self.run(rlm_cli, model, log_file, "--max-steps", "2")
        loud = [r for r in caplog.records if r.name.startswith(self.quiet_loggers or ("\0",)) and r.levelno >= 30]
        assert not loud, caplog.text  # a run that ends on purpose is not logged as a failure
        assert outcome["termination_reason"] == "max_steps" and not outcome["completed"] and outcome["error"] is None
        assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT)] * 2
        assert outcome["usage"]["root"]["calls"] == 3  # max_steps root turns (the third is refused), one synthesis
        assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
        assert result.code != 0  # not completed: exit 1, with the synthesised answer (the script's next reply)

    def test_final_called_in_run_code_ends_the_run(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        code = "hit = [l for l in context.splitlines() if 'FAILED' in l][0]\nFINAL('Sensor B: ' + hit.split()[-1])"
        model = rlm_script([call("run_code", code=code)])  # one reply: no further model call is made
        result, outcome, steps, _ = self.run(rlm_cli, model, log_file)
        assert result.code == 0 and outcome["final_response"] == "Sensor B: 42.7", result.err
        assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("final", FINAL)]
        assert steps[1]["observation"]["final"] == "Sensor B: 42.7" and outcome["usage"]["root"]["calls"] == 1

    def test_an_answer_given_in_the_last_allowed_turn_stands(self, rlm_cli: Any, rlm_script: Any,
                                                              log_file: Path) -> None:
        model = rlm_script([call("run_code", code="print(1)"), call("run_code", code="FINAL('B')")])
        result, outcome, steps, _ = self.run(rlm_cli, model, log_file, "--max-steps", "2")
        assert result.code == 0 and outcome["completed"] and outcome["final_response"] == "B", result.err
        assert outcome["termination_reason"] == "final" and outcome["usage"]["root"]["calls"] == 2
        assert steps[-1]["action"] == "final" and steps[-2]["observation"]["final"] == "B"

    def test_failing_code_is_a_tool_error_the_model_sees(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        model = rlm_script([call("run_code", code="print(context[10**9])"), final("no idea")])
        result, outcome, steps, _ = self.run(rlm_cli, model, log_file)
        assert outcome["final_response"] == "no idea"
        assert actions(steps)[:2] == [("tool_call", TOOL_CALL), ("tool_error", TOOL_ERROR)]
        assert not steps[1]["observation"]["ok"] and "IndexError" in steps[1]["observation"]["output"]

    def test_the_llm_query_tool_and_the_sub_call_budget(self, rlm_cli: Any, rlm_script: Any, log_file: Path) -> None:
        model = rlm_script([call("llm_query", prompt="Extract the sensor: day 117 sensor B"),
                            call("llm_query", prompt="Extract the sensor again")], rules=SUB_RULES)
        _, outcome, steps, _ = self.run(rlm_cli, model, log_file, "--max-llm-calls", "1")
        assert actions(steps) == [("tool_call", TOOL_CALL), ("tool_result", TOOL_RESULT), ("tool_call", TOOL_CALL),
                                  ("tool_error", TOOL_ERROR)]
        assert steps[1]["observation"]["output"] == "sensor B, 42.7"
        assert "max_llm_calls" in steps[3]["observation"]["output"]
        assert outcome["termination_reason"] == "max_llm_calls", "a refused sub-call ends the run, as in a native run"

    @pytest.mark.parametrize("chars", [1_000, 2_000_000])
    def test_the_context_stays_in_the_sandbox_not_the_prompt(self, tmp_path: Path, monkeypatch: Any,
                                                             chars: int) -> None:
        monkeypatch.chdir(tmp_path)
        runner = isolated_runner(tmp_path, plugins=self.distribution, sandbox="process")
        find = call("run_code", code="i = context.find('magic number')\nprint(llm_query('Extract the number: ' + "
                                     "context[i:i+40]))")
        result, _, root = run_scripted(runner, "What is the magic number?", [find, final("4217")],
                                       sub_rules=[{"match": "Extract", "text": "4217"}], context=haystack(chars),
                                       framework=self.framework)
        assert result.final_response == "4217" and result.usage.sub.calls == 1, result.error
        prompts = ["".join(m["content"] for m in sent) for sent in root.calls]
        assert all(HAYSTACK_NEEDLE not in prompt for prompt in prompts)
        assert f"a string of {len(haystack(chars)):,} characters" in prompts[0]
        if self.max_first_prompt_chars is not None:
            assert len(prompts[0]) < self.max_first_prompt_chars


class Reading:
    """The typed answer of ``UserToolScenarios`` (a pydantic model, made on first use: pydantic is not imported
    with the testing kit)."""

    _model: Any = None

    @classmethod
    def model(cls) -> Any:
        if cls._model is None:
            from pydantic import BaseModel

            class SensorReading(BaseModel):
                sensor: str
                reading: float

            cls._model = SensorReading
        return cls._model


#: The same answer type as a JSON Schema (``--output-schema``).
READING_SCHEMA = {"type": "object", "properties": {"sensor": {"type": "string"}, "reading": {"type": "number"}},
                  "required": ["sensor", "reading"]}


class UserToolScenarios:
    """Subclass in a ``Test…`` class and set ``framework`` and ``distribution`` (see the module docstring)."""

    framework: str = ""
    distribution: str = ""
    #: the step action that records an answer of the wrong type ("final_rejected"; a framework whose own structured
    #: output rejected it first may record a "retry" instead)
    rejected_actions: tuple[str, ...] = ("final_rejected", "retry")

    @pytest.fixture
    def runner(self, tmp_path: Path, monkeypatch: Any) -> Any:
        monkeypatch.chdir(tmp_path)
        return isolated_runner(tmp_path, plugins=self.distribution, sandbox="process")

    def run(self, runner: Any, replies: list[str], **options: Any) -> tuple[Any, list, list[str]]:
        """(the RunResult, its events, the text of each root prompt)."""
        result, events, root = run_scripted(runner, QUESTION, replies, sub_rules=SUB_RULES, context=LOG,
                                            framework=self.framework, **options)
        prompts = ["\n".join(str(m["content"]) for m in sent) for sent in root.calls]
        return result, events, prompts

    def test_the_users_tools_are_the_agents_tools(self, runner: Any) -> None:
        called: list[tuple[str, int]] = []

        def reading(sensor: str, day: int = 117) -> str:
            """Read a sensor's last reading on a day from the station database."""
            called.append((sensor, day))
            return {"B": "42.7"}.get(sensor, "no reading")

        def recalibrate(sensor: str) -> dict:
            """Recalibrate a sensor."""
            raise RuntimeError(f"sensor {sensor} is offline")

        replies = [call("reading", sensor="B"), call("recalibrate", sensor="B"),
                   call("run_code", code="print('in code:', reading('A', 118))"), final(ANSWER)]
        result, events, prompts = self.run(runner, replies, tools=[reading, recalibrate])
        assert result.completed and result.final_response == ANSWER, result.error
        assert called == [("B", 117), ("A", 118)]  # the model's arguments (the default filled by the function)
        assert "reading" in prompts[0] and "Read a sensor's last reading on a day" in prompts[0]  # declared
        assert "42.7" in prompts[1]  # the result reached the model
        assert "RuntimeError: sensor B is offline" in prompts[2]  # the exception too, and the run went on
        assert "in code: no reading" in prompts[3]  # the same function inside run_code
        steps = [event.data for event in events if event.type == "step"]
        assert [step["action"] for step in steps] == ["tool_call", "tool_result", "tool_call", "tool_error",
                                                      "tool_call", "tool_result", "final"]
        assert steps[0]["observation"]["args"] == {"sensor": "B"} and "42.7" in steps[1]["observation"]["output"]
        assert "sensor B is offline" in json.dumps(steps[3]["observation"])
        written = [e["data"] for e in trajectory(result)
                   if e["type"] == "sub_call" and e["data"]["kind"] == "tool_call"]
        assert [(c["tool"], c.get("result"), c.get("error")) for c in written] == [
            ("reading", '"42.7"', None), ("recalibrate", None, "RuntimeError: sensor B is offline"),
            ("reading", '"no reading"', None)]
        assert json.loads(written[0]["arguments"])["sensor"] == "B"

    def test_a_tool_may_not_take_a_name_of_the_frameworks_own(self, runner: Any) -> None:
        from rlm_host import ConfigError

        def lookup(code: str) -> str:
            """Look something up."""
            return code

        with pytest.raises(ConfigError, match="run_code"):
            self.run(runner, [final(ANSWER)], tools={"run_code": lookup})

    @pytest.mark.parametrize("given", ["model", "schema"])
    def test_the_answer_is_held_to_the_output_type(self, runner: Any, given: str) -> None:
        output_type = Reading.model() if given == "model" else READING_SCHEMA
        replies = [call("run_code", code="FINAL('sensor B, 42.7')"), final({"sensor": "B"}),
                   final({"sensor": "B", "reading": 42.7})]
        result, events, prompts = self.run(runner, replies, output_type=output_type)
        assert result.completed and result.termination_reason == "final", result.error
        expected = {"sensor": "B", "reading": 42.7}
        assert json.loads(result.final_response) == expected
        assert result.output == (Reading.model()(**expected) if given == "model" else expected)
        assert '"reading"' in prompts[0]  # the schema is in the instructions
        assert "does not match the required type" in prompts[1]  # FINAL() in run_code with text: sent back
        assert "reading" in prompts[2].split(final({"sensor": "B"}))[-1]  # the missing field, named
        steps = [event.data for event in events if event.type == "step"]
        assert steps[1]["observation"].get("final_rejected")  # the run_code result says what was wrong
        assert any(step["action"] in self.rejected_actions for step in steps[2:-1])
        assert steps[-1]["action"] == "final"
