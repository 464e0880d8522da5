"""The contract suites can fail: each kind's suite, subclassed for a deliberately broken implementation and run
with ``pytester``, fails the checks that catch the breakage (a suite that passes everything proves nothing to the
third parties trusting it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent

#: Broken components, loaded with RLM_PLUGIN_MODULES=broken_plugins.
BROKEN_PLUGINS = '''
from rlm_host import BenchmarkPackSpec, EnvironmentSpec, FrameworkOutcome, FrameworkSpec, hookimpl
from rlm_host.environments.pure_rlm.environment import PureRLMEnvironment


class LeakyEnvironment(PureRLMEnvironment):
    """pure_rlm, but close() never releases the sandbox session."""

    def close(self):
        pass


class DeafEnvironment(PureRLMEnvironment):
    """pure_rlm, but the user's [run] instructions never reach the model."""

    def messages(self, step):
        said = self.ctx.instructions
        messages = super().messages(step)
        return [{**m, "content": m["content"].replace(said, "")} for m in messages] if said else messages


class PretendFramework:
    """Never runs the model's code: says it did, and answers from the reply."""

    def __init__(self, settings, ctx):
        self.ctx = ctx

    def run(self):
        messages = [{"role": "user", "content": self.ctx.task}]
        while True:
            reply = self.ctx.root.complete(messages).text or ""
            if reply.startswith("ANSWER:"):
                answer = reply.removeprefix("ANSWER:").strip()
                self.ctx.step("final", {"answer": answer}, self.ctx.reward_for("final"), reply=reply)
                return FrameworkOutcome(answer)
            self.ctx.step("run_code", {"output": "done"}, self.ctx.reward_for("tool_result", True), code=reply,
                          reply=reply)
            messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "done"}]

    def close(self):
        pass


_calls = []


def shifting_pack(settings, services):
    """Cases without an answer, different at each build."""
    _calls.append(1)
    return [{"case_id": f"c{len(_calls)}", "task": "What is 6 * 7?", "expected": None}]


@hookimpl
def rlm_register_environments():
    return [EnvironmentSpec(name, description, f"broken_plugins:{factory}",
                            settings="rlm_host.environments.pure_rlm.environment:PureRLMSettings",
                            context_on_disk=True)
            for name, description, factory in (("leaky", "pure_rlm that leaks its sandbox", "LeakyEnvironment"),
                                               ("deaf", "pure_rlm deaf to --instructions", "DeafEnvironment"))]


@hookimpl
def rlm_register_frameworks():
    return [FrameworkSpec("pretend", "runs no code", "broken_plugins:PretendFramework", mode="agent")]


@hookimpl
def rlm_register_benchmark_packs():
    return [BenchmarkPackSpec("shifting", "no answers, never the same", "broken_plugins:shifting_pack")]
'''


def failures(pytester: pytest.Pytester, source: str, only: str = "") -> dict[str, str]:
    """Run ``source`` as a test module (with ``broken_plugins`` importable; ``only``: a ``-k`` expression): test
    name → its failure text, or "passed" / "skipped"."""
    pytester.makepyfile(broken_plugins=BROKEN_PLUGINS, test_broken=source)
    pytester.syspathinsert()
    pytester.syspathinsert(TESTS)  # tests/support, for test modules that use it
    recorder = pytester.inline_run("-p", "no:cacheprovider", *(("-k", only) if only else ()))
    outcome: dict[str, str] = {}
    for report in recorder.getreports("pytest_runtest_logreport"):
        name = report.nodeid.split("::")[-1]
        if report.failed:
            outcome[name] = failure_reason(report)
        elif report.when == "call" or (report.skipped and name not in outcome):
            outcome.setdefault(name, report.outcome)
    return outcome


def failure_reason(report: pytest.TestReport) -> str:
    """What a failure says, without the test's source: the exception's message and pytest's ``E`` lines (the
    assertion's explanation), so a reason matched below is the failure's, never a word of the check's code."""
    longrepr = report.longrepr
    crash = getattr(longrepr, "reprcrash", None)
    entries = getattr(getattr(longrepr, "reprtraceback", None), "reprentries", [])
    explained = [line[1:].strip() for entry in entries for line in getattr(entry, "lines", []) if line.startswith("E")]
    if crash is None and not explained:  # a skip or collection error: its text is all there is
        return str(longrepr)
    return "\n".join([crash.message if crash is not None else "", *explained])


def assert_fails(outcome: dict[str, str], test: str, *why: str) -> None:
    text = outcome.get(test, "not run")
    assert text not in ("passed", "skipped", "not run"), f"{test}: {text} for a broken implementation"
    assert all(w in text for w in why), f"{test} failed for another reason:\n{text[-3000:]}"


def test_sandbox_contract_fails_a_sandbox_that_loses_stderr_and_breaks_on_a_second_shutdown(pytester):
    outcome = failures(pytester, '''
from rlm_host.sandbox.process import ProcessSandbox
from rlm_host.testing import SandboxContract


class Broken(ProcessSandbox):
    def execute(self, code, *, timeout=None):
        return super().execute(code, timeout=timeout).model_copy(update={"stderr": ""})

    def shutdown(self):
        if getattr(self, "down", False):
            raise RuntimeError("already shut down")
        self.down = True
        super().shutdown()


class TestBroken(SandboxContract):
    name = "process"
    security_boundary = False

    def make_sandbox(self, limits):
        return Broken(limits=limits)

''', only="namespace_persists or shutdown_is_idempotent")
    assert_fails(outcome, "test_namespace_persists_and_print_is_captured", "stderr")
    assert_fails(outcome, "test_shutdown_is_idempotent_and_final", "already shut down")


def test_provider_contract_fails_a_connector_that_drops_usage_and_knows_no_window(pytester):
    outcome = failures(pytester, '''
import pytest
from rlm_host.testing.openai_server import OpenAIServer, answer, error

from rlm_host.testing import ProviderContract


class Broken:
    """The openai connector, but it reports no usage and no context window."""

    def __init__(self, inner):
        self.inner = inner
        self.context_window = None

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def complete(self, *args, **kwargs):
        return self.inner.complete(*args, **kwargs).model_copy(update={"input_tokens": 0, "output_tokens": 0})


class TestBroken(ProviderContract):
    provider = "openai"
    model = "gpt-4o-mini"
    key_help = "OPENAI_API_KEY"
    context_windows = {"gpt-4o": 128_000}
    fake_server = OpenAIServer

    def answer(self, text, usage=(11, 7)):
        return answer(text, prompt_tokens=usage[0], completion_tokens=usage[1])

    def error(self, status, message):
        return error(status, message)

    def make_connector(self, model, options, settings=None):
        return Broken(super().make_connector(model, options, settings))
''', only="completion_with_its_usage or context_windows")
    assert_fails(outcome, "test_an_answer_is_a_completion_with_its_usage", "12")
    assert_fails(outcome, "test_context_windows", "128000")


@pytest.mark.parametrize(("environment", "failing", "why"), [
    ("leaky", "test_close_is_idempotent_and_safe_before_start", "release"),  # never releases its sandbox
    ("deaf", "test_the_users_instructions_reach_the_model", "Report temperatures in kelvin."),  # drops --instructions
])
def test_environment_contract_fails_a_broken_environment(pytester, environment, failing, why):
    outcome = failures(pytester, f'''
import pytest
from rlm_host.plugins.host import PluginHost
from rlm_host.testing import EnvironmentContract


class TestBroken(EnvironmentContract):
    environment = "{environment}"
    final_reply = "FINAL(42)"
    final_answer = "42"
    working_reply = "```repl\\nx = len(context)\\nprint(x)\\n```"

    @pytest.fixture
    def host(self):
        return PluginHost(environ={{"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "broken_plugins"}}).load()
''')
    assert_fails(outcome, failing, why)


def test_framework_contract_fails_a_framework_that_runs_no_code(pytester):
    """Its steps' replies hold the code word (the answer): only the code's output may count as having seen
    ``context``."""
    outcome = failures(pytester, '''
from rlm_host.testing import FrameworkContract


class TestBroken(FrameworkContract):
    framework = "pretend"
    modules = ("broken_plugins",)
    finishing_replies = ("x = llm_query('What is the code word? ' + context)\\nprint(context.splitlines()[2], x)",
                         "ANSWER: PAPAYA")
    final_answer = "PAPAYA"
    sub_rules = ({"match": "code word", "text": "PAPAYA"},)
    working_reply = "print(len(context))"
''')
    assert outcome["test_a_run_ends_with_the_answer_and_its_steps_recorded_as_they_happened"] == "passed"
    assert_fails(outcome, "test_code_ran_in_the_sandbox_with_the_context_and_llm_query", "observation")


SINK_SUITE = '''
import json
from collections import Counter

import pytest

from rlm_host.events import EVENT_TYPES
from rlm_host.testing import SinkContract


class Recording:
    """A sink writing every event it knows to events.jsonl at close."""

    KNOWN = set(EVENT_TYPES)  # every type this host sends (a "from_a_future_version" one is not among them)

    def __init__(self, home):
        self.path, self.held = home / "events.jsonl", []

    def handle(self, event):
        if event.type in self.KNOWN:
            self.held.append(event)

    def close(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            for event in self.held:
                out.write(json.dumps({"run_id": event.run_id, "type": event.type}) + "\\n")
        self.held = []


class StopsAtUnknown(Recording):
    def handle(self, event):
        if event.type not in self.KNOWN:
            self.KNOWN = set()  # swallowed, and everything after it with it
        super().handle(event)


class RewritesOnClose(Recording):
    def close(self):
        held = self.held
        super().close()
        self.held = held  # a second close writes it all again


class Base(SinkContract):
    sink = "local"
    made = Recording

    @pytest.fixture
    def make_sink(self, home):
        yield lambda: self.made(home)

    def check_output(self, events, home):
        lines = [json.loads(line) for line in (home / "events.jsonl").read_text().splitlines()]
        assert Counter((x["run_id"], x["type"]) for x in lines) == Counter((e.run_id, e.type) for e in events)


class TestGood(Base):
    pass


class TestStopsAtUnknown(Base):
    made = StopsAtUnknown


class TestRewritesOnClose(Base):
    made = RewritesOnClose
'''


def test_sink_contract_fails_a_sink_broken_by_an_unknown_event_or_a_second_close(pytester):
    pytester.makepyfile(broken_plugins=BROKEN_PLUGINS, test_broken=SINK_SUITE)
    recorder = pytester.inline_run("-p", "no:cacheprovider", "-k", "ignores_event or close_is_idempotent")
    outcome = {r.nodeid.split("::", 1)[1]: r.outcome for r in recorder.getreports("pytest_runtest_logreport")
               if r.when == "call"}
    assert outcome == {
        "TestGood::test_ignores_event_types_it_does_not_know": "passed",
        "TestGood::test_close_is_idempotent_also_with_no_event": "passed",
        "TestStopsAtUnknown::test_ignores_event_types_it_does_not_know": "failed",
        "TestStopsAtUnknown::test_close_is_idempotent_also_with_no_event": "passed",
        "TestRewritesOnClose::test_ignores_event_types_it_does_not_know": "passed",
        "TestRewritesOnClose::test_close_is_idempotent_also_with_no_event": "failed",
    }


def test_context_loader_contract_fails_a_loader_that_loses_text_and_reads_anything(pytester):
    outcome = failures(pytester, '''
import pytest
from rlm_host.testing import ContextLoaderContract


class Blank:
    def load(self, path):
        return ""  # never raises, never has the text


class TestBroken(ContextLoaderContract):
    loader = "text"

    def sample(self, folder):
        path = folder / "notes.txt"
        path.write_text("the pump failed at 42 bar")
        return path, "42 bar"

    def broken(self, folder):
        path = folder / "bad.txt"
        path.write_bytes(b"\\x00\\x01")
        return path

    @pytest.fixture
    def lookup(self):
        return lambda path: Blank()
''')
    assert_fails(outcome, "test_loads_the_fact", "42 bar")
    assert_fails(outcome, "test_a_broken_file_is_one_clear_error", "InputError")


def test_benchmark_pack_contract_fails_a_pack_without_answers_that_changes_at_each_build(pytester):
    outcome = failures(pytester, '''
from rlm_host.plugins.host import PluginHost
from rlm_host.testing import BenchmarkPackContract


class TestBroken(BenchmarkPackContract):
    packs = ("shifting",)

    def _host(self):
        return PluginHost(environ={"RLM_PLUGINS": "", "RLM_PLUGIN_MODULES": "broken_plugins"}).load()
''')
    assert_fails(outcome, "test_every_case_has_an_id_a_task_and_an_answer", "no expected answer")
    assert_fails(outcome, "test_building_a_pack_twice_gives_the_same_cases", "shifting")
