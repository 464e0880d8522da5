"""``FrameworkContract``: the test suite of the framework contract (``rlm_host.sdk.frameworks``).

A framework plugin proves it keeps the contract by subclassing it in its tests::

    from rlm_host.testing import FrameworkContract


    class TestMyFramework(FrameworkContract):
        framework = "my-framework"               # the registered name
        distribution = "rlm-adapter-mine"         # RLM_PLUGINS: the distribution registering it
        heavy_modules = ("my_framework",)         # never imported when `rlm` starts
        finishing_replies = (...)                 # root replies: run code (using llm_query) printing the
                                                  # context's line with the code word, then answer …
        final_answer = "42"                       # … this
        sub_rules = ({"match": ".", "text": "7"},)  # the sub-model's answers to llm_query
        working_reply = "..."                     # a root reply that runs code and does not finish

pytest then runs every ``test_*`` below with scripted models through the real runner, in the ``process``
sandbox (``sandbox``). What it checks is what the runner and the user rely on: the framework is registered with a
mode and loads lazily; a run ends with the answer, its steps recorded in order as they happened, the code run in
the run's sandbox with ``context`` there, root and sub usage counted; ``max_steps`` stops the framework cleanly;
a failing model ends the run with an error, its trajectory complete.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlm_host.plugins.host import PluginHost
from rlm_host.testing.engine import isolated_runner, run_scripted, trajectory

CONTEXT = "line one\nline two\nthe code word is PAPAYA\n"
#: A line of ``CONTEXT`` that no question, reply, rule or answer holds: seen in a step's observation, it was
#: produced by code that ran over ``context`` in the sandbox.
CONTEXT_MARKER = "the code word is PAPAYA"


class FrameworkContract:
    """Subclass in a ``Test…`` class and set the attributes below (see the module docstring)."""

    framework: str = ""
    distribution: str = ""
    heavy_modules: tuple[str, ...] = ()
    finishing_replies: tuple[str, ...] = ()
    final_answer: str = ""
    sub_rules: tuple[dict[str, Any], ...] = ()
    working_reply: str = ""
    sandbox: str = "process"
    #: unpackaged hook modules to load too (``RLM_PLUGIN_MODULES``): a framework being written, or a test's own
    modules: tuple[str, ...] = ()

    def host(self) -> PluginHost:
        return PluginHost(environ={"RLM_PLUGINS": self.distribution, "RLM_PLUGIN_MODULES": ",".join(self.modules)})

    @pytest.fixture
    def runner(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
        monkeypatch.chdir(tmp_path)
        return isolated_runner(tmp_path, host=self.host(), sandbox=self.sandbox)

    def run(self, runner: Any, replies: Any, **options: Any) -> tuple[Any, list]:
        result, events, _ = run_scripted(runner, "What is the code word in the context?", replies,
                                         sub_rules=self.sub_rules, context=CONTEXT, framework=self.framework,
                                         **options)
        return result, events

    # ------------------------------------------------------------------ registration

    def test_is_registered_with_a_mode_and_a_loadable_factory(self) -> None:
        spec = self.host().load().frameworks().get(self.framework)
        assert spec.mode in ("native_rlm", "agent"), spec.mode
        assert spec.readiness().ok, spec.readiness()
        assert callable(spec.load())

    def test_the_framework_is_not_imported_when_rlm_starts(self) -> None:
        environ = {"RLM_PLUGINS": self.distribution, "RLM_PLUGIN_MODULES": ",".join(self.modules)}
        code = ("import sys; from rlm_host.plugins.host import PluginHost; "
                f"PluginHost(environ={environ!r}).load(); "
                f"print(json.dumps([m for m in {list(self.heavy_modules)!r} if m in sys.modules]))")
        done = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [], "imported at start: " + done.stdout

    # ------------------------------------------------------------------ runs

    def test_a_run_ends_with_the_answer_and_its_steps_recorded_as_they_happened(self, runner: Any) -> None:
        result, events = self.run(runner, self.finishing_replies)
        assert result.completed and result.final_response == self.final_answer, result.error
        assert result.framework == self.framework and result.sandbox == self.sandbox
        kinds = [event.type for event in events]
        assert kinds[0] == "run_start" and kinds[-1] == "final" and "step" in kinds
        steps = [event.data for event in events if event.type == "step"]
        assert [s["step"] for s in steps] == list(range(1, len(steps) + 1)) == list(range(1, result.steps + 1))
        assert result.usage.root.calls >= 1 and result.usage.root.input_tokens > 0
        per_step = sum(s["usage"]["root"]["input_tokens"] for s in steps)
        assert per_step <= result.usage.root.input_tokens, "step usage is the usage since the previous step"
        written = trajectory(result)
        assert [e["type"] for e in written][0] == "run_start" and written[-1]["type"] == "final"

    def test_code_ran_in_the_sandbox_with_the_context_and_llm_query(self, runner: Any) -> None:
        result, events = self.run(runner, self.finishing_replies)
        observed = json.dumps([event.data.get("observation") for event in events if event.type == "step"])
        assert CONTEXT_MARKER in observed, "the code's output (a step's observation) shows a line of `context`"
        if self.sub_rules:
            assert result.usage.sub.calls >= 1, "llm_query inside the code reached the sub-model"
            assert any(event.type == "sub_call" for event in events)

    def test_max_steps_stops_the_framework_cleanly_after_that_many_root_turns(self, runner: Any) -> None:
        result, _ = self.run(runner, [self.working_reply] * 12, max_steps=2)
        assert result.termination_reason == "max_steps" and result.error is None, result.error
        assert result.usage.root.calls == 3 and result.steps >= 2, "max_steps root turns, then one synthesis call"
        events = trajectory(result)
        purposes = [e["data"]["purpose"] for e in events if e["type"] == "model_call_start" and e["depth"] == 0
                    and e["data"]["role"] == "root"]
        assert purposes[-1] == "synthesis" and purposes.count("synthesis") == 1
        assert events[-1]["type"] == "final"

    def test_a_failing_model_ends_the_run_with_an_error_and_a_full_trajectory(self, runner: Any) -> None:
        result, _ = self.run(runner, [])  # the script is empty: the first root call fails
        assert not result.completed and result.termination_reason == "error" and result.error
        assert trajectory(result)[-1]["type"] == "final"


def in_sandbox(contract: type[FrameworkContract], sandbox: str, distribution: str) -> type:
    """The same contract (``contract``: a ``FrameworkContract`` subclass with its replies) with the code in another
    sandbox runtime, registered by ``distribution``: ``TestMineInBox = in_sandbox(TestMine, "box", "acme-box")``.
    (A copy, so pytest does not collect the original twice.)"""
    fields = {name: getattr(contract, name) for name in ("framework", "heavy_modules", "finishing_replies",
                                                         "final_answer", "sub_rules", "working_reply",
                                                         "modules")}
    fields.update(distribution=f"{contract.distribution},{distribution}", sandbox=sandbox)
    return type(f"{contract.__name__.removeprefix('Test')}In{sandbox.title()}", (FrameworkContract,), fields)


def assert_a_real_model_run_ends_cleanly(rlm_cli: Any, rlm_isolated: Any, *, framework: str, distribution: str,
                                         base_url: str, model: str = "openai:smollm2") -> dict[str, Any]:
    """Drive ``framework`` with a real (tiny, local) model behind an OpenAI-compatible server at ``base_url``: it
    seldom follows a framework's reply format, so what must hold whatever it answers is checked — the run ends
    cleanly (an answer, the step limit, or the framework giving up with a clear error; never an internal error),
    its usage is counted from the server's token counts, its trajectory is complete. Returns the run JSON."""
    notes = rlm_isolated.work / "notes.txt"
    notes.write_text("Day 1: all sensors fine.\nDay 2: sensor B failed at 42.7 bar.\n")
    result = rlm_cli("run", "Which sensor failed?", "--framework", framework, "--context", str(notes), "--model",
                     model, "--base-url", base_url, "--max-steps", "3", "--sandbox", "process", "--json",
                     plugins=distribution)
    outcome = json.loads(result.out)
    assert outcome["framework"] == framework
    assert outcome["termination_reason"] in ("final", "max_steps", "error"), outcome
    assert 1 <= outcome["usage"]["root"]["calls"] <= 4 and outcome["usage"]["root"]["input_tokens"] > 50  # + synthesis
    events = [json.loads(line) for line in Path(outcome["trajectory_path"]).read_text().splitlines()]
    assert events[0]["type"] == "run_start" and events[-1]["type"] == "final"
    # "a clear error" is one the host or the framework raised on purpose (an RlmError, recorded with its class as
    # ``where``), never an exception that escaped the framework (``where: internal``, "SomeError: …" as its text)
    errors = [e["data"] for e in events if e["type"] == "error"]
    assert not [e for e in errors if e.get("where") == "internal"], errors
    if outcome["termination_reason"] == "error":
        assert errors and not re.match(r"^[A-Z]\w*(Error|Exception)\b", outcome["error"] or ""), outcome["error"]
    return outcome
