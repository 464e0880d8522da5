"""``EnvironmentContract``: the test suite of the environment protocol (``rlm_host.sdk.environments``).

An environment plugin proves it keeps the protocol by subclassing it in its tests::

    from rlm_host.testing import EnvironmentContract


    class TestMyEnvironment(EnvironmentContract):
        environment = "mine"                 # the registered name
        distribution = "rlm-env-mine"        # RLM_PLUGINS: the distribution registering it ("" for built-ins)
        final_reply = '{"action": "final", "answer": "42"}'   # a root reply that ends the run …
        final_answer = "42"                  # … with this answer
        working_reply = '{"action": "run_python", "code": "x = 1"}'  # a reply that acts but does not finish

pytest then runs every ``test_*`` below against the environment, in the ``process`` sandbox (``sandbox``) with
scripted models: the environment is built by its registered factory as ``factory(settings, ctx)``, driven step by
step as the runner drives it, and run end to end through the real runner. Real examples: the host's
tests/test_environments_contract.py (pure_rlm) and plugins/rlm-env-generic/tests (generic).

What the contract checks, beyond the protocol's docstrings, is what the runner and the user rely on: the context
never enters a prompt (only its description); an empty or malformed reply is a step, never an exception;
``close()`` is idempotent and safe before ``start()``; ``synthesize()`` returns text or None; a finished run's
trajectory holds ``run_start``, one ``step`` per turn and ``final``; a declared ``reply_format`` is a
``ReplyFormat`` with a grammar or a JSON-serialisable schema.
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import pytest

from rlm_host.context import describe_context
from rlm_host.engine.budget import Budget
from rlm_host.engine.model_client import ModelClient
from rlm_host.engine.scope import RunScope
from rlm_host.environments.protocol import EnvironmentContext
from rlm_host.events import EventBus, RunEvent
from rlm_host.models.protocol import Completion, ReplyFormat
from rlm_host.models.scripted import ScriptedConnector
from rlm_host.plugins.host import PluginHost
from rlm_host.results import ActionResult, RunUsage
from rlm_host.sandbox.protocol import SandboxLimits
from rlm_host.services import SandboxServices
from rlm_host.testing.engine import HAYSTACK_NEEDLE, haystack, isolated_runner, run_scripted, trajectory


class EnvironmentContract:
    """Subclass in a ``Test…`` class and set the attributes below (see the module docstring)."""

    environment: str = ""
    distribution: str = ""
    final_reply: str = ""
    final_answer: str = ""
    working_reply: str = ""
    sandbox: str = "process"
    #: Replies the environment treats as "no action" (it must record them as a step, not raise).
    malformed_replies: tuple[Optional[str], ...] = (None, "", "   \n")

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def host(self) -> PluginHost:
        return PluginHost(environ={"RLM_PLUGINS": self.distribution}).load()

    @pytest.fixture
    def events(self) -> list[RunEvent]:
        return []

    @pytest.fixture
    def sessions(self) -> list[Any]:
        """The sandbox sessions the environments made by ``make_environment`` opened (each records its
        ``shutdown`` calls in ``session.rlm_contract_shutdowns``)."""
        return []

    @pytest.fixture
    def make_environment(self, host: PluginHost, events: list[RunEvent], sessions: list[Any], tmp_path: Path):
        """``make_environment(context, root_replies=(), task=..., instructions=None)`` → an environment built by its
        factory (``instructions``: the user's ``[run] instructions``)."""
        made: list[Any] = []

        def make(context: Any = None, root_replies: tuple[Any, ...] = (), task: str = "What is the answer?",
                 instructions: Optional[str] = None) -> Any:
            spec = host.environments().get(self.environment)
            ctx = self.context_for(host, events, tmp_path, task, context, list(root_replies), spec)
            ctx = replace(ctx, instructions=instructions) if instructions is not None else ctx
            environment = spec.create(self.settings(spec), replace(ctx, open_sandbox=_tracked(ctx.open_sandbox,
                                                                                              sessions)))
            made.append(environment)
            return environment

        yield make
        for environment in made:
            environment.close()

    def settings(self, spec: Any) -> Any:
        """The settings the environment is built with: its settings model's defaults (override to change)."""
        model = spec.settings_model()
        return model() if model is not None else None

    def context_for(self, host: PluginHost, events: list[RunEvent], tmp_path: Path, task: str, context: Any,
                    root_replies: list[Any], spec: Any = None) -> EnvironmentContext:
        """An EnvironmentContext as the runner builds one: scripted models, a real sandbox, a shared budget, and
        for an environment whose spec says ``workspace=True`` a project folder (``tmp_path / "project"``)."""
        bus = EventBus()
        bus.subscribe("test", events.append)
        scope = RunScope("run_contract", "run_contract", 0, bus)
        budget = Budget(timeout=120, max_llm_calls=20)
        usage, lock = RunUsage(), threading.Lock()
        root = ModelClient(ScriptedConnector.from_responses(root_replies, name="scripted:root"), "root", usage.root,
                           budget, lock, scope=scope)
        sub = ModelClient(ScriptedConnector.from_responses([], rules=[{"match": ".", "text": "sub answer"}],
                                                           name="scripted:sub"), "sub", usage.sub, budget, lock,
                          scope=scope)
        sandbox = host.sandboxes().get(self.sandbox)
        limits = SandboxLimits(exec_timeout=20)
        workdir = None
        if spec is not None and spec.workspace:
            workdir = tmp_path / "project"
            workdir.mkdir(exist_ok=True)
        services = SandboxServices(home=tmp_path / ".rlm", limits=limits, workspace=workdir,
                                   packages=tuple(spec.sandbox_packages) if spec is not None else ())

        def refuse_child(child_task: str, child_context: Any) -> Any:
            from rlm_host.errors import RecursionRefused

            raise RecursionRefused("max_depth", "no child runs in the contract's unit tests")

        return EnvironmentContext(
            task=task, context=context, scope=scope, root=root, sub=sub, budget=budget,
            rewards=_default_rewards(), limits=limits,
            open_sandbox=lambda: sandbox.create(None, services),
            spawn_child=refuse_child, sub_model_for=lambda model: sub, max_steps=4, max_depth=0,
            context_meta=describe_context(context), workdir=workdir,
            environment_builder=lambda name, inner: host.environments().get(name).create(None, inner),
        )

    # ------------------------------------------------------------------ the protocol, step by step

    def test_is_registered_with_a_loadable_factory(self, host: PluginHost) -> None:
        spec = host.environments().get(self.environment)
        assert spec.readiness().ok, spec.readiness()
        assert callable(spec.load())

    def test_start_then_messages_show_the_task_not_the_context(self, make_environment) -> None:
        environment = make_environment(context=haystack(50_000), task="Find the magic number.")
        environment.start()
        messages = environment.messages(1)
        assert messages and all(set(m) >= {"role", "content"} for m in messages)
        text = "".join(m["content"] for m in messages)
        assert "Find the magic number." in text
        assert HAYSTACK_NEEDLE not in text and len(text) < 50_000, "the context itself must stay out of the prompt"

    def test_the_users_instructions_reach_the_model(self, make_environment) -> None:
        """``--instructions`` / ``[run] instructions``: the user's domain guidance is part of what the model is sent
        (added to the environment's own prompt, never replacing it)."""
        environment = make_environment(context="some context", instructions="Report temperatures in kelvin.")
        environment.start()
        assert "Report temperatures in kelvin." in "".join(m["content"] for m in environment.messages(1))

    def test_final_reply_after_a_working_step_finishes_with_its_answer(self, make_environment) -> None:
        environment = make_environment(context="some context")
        environment.start()
        environment.messages(1)
        environment.execute(Completion(text=self.working_reply), 1)  # some environments nudge a final at step 1
        environment.messages(2)
        result = environment.execute(Completion(text=self.final_reply), 2)
        assert isinstance(result, ActionResult)
        assert result.done and result.final_response == self.final_answer

    def test_working_reply_is_a_step_that_does_not_finish(self, make_environment) -> None:
        environment = make_environment(context="some context")
        environment.start()
        environment.messages(1)
        result = environment.execute(Completion(text=self.working_reply), 1)
        assert not result.done and result.action
        assert environment.messages(2), "the next prompt must exist after a working step"

    @pytest.mark.parametrize("index", range(3))
    def test_empty_or_malformed_replies_are_steps_not_exceptions(self, make_environment, index: int) -> None:
        if index >= len(self.malformed_replies):
            pytest.skip("no such malformed reply declared")
        environment = make_environment(context="some context")
        environment.start()
        environment.messages(1)
        reply = Completion(text=self.malformed_replies[index], raw={"malformed": "test"})
        result = environment.execute(reply, 1)
        assert not result.done and result.reward <= 0

    def test_close_is_idempotent_and_safe_before_start(self, make_environment, sessions: list[Any],
                                                       host: PluginHost) -> None:
        never_started = make_environment(context="x")
        never_started.close()
        never_started.close()
        assert all(s.rlm_contract_shutdowns for s in sessions), "close() before start() left a sandbox session open"
        environment = make_environment(context="x")
        environment.start()
        environment.messages(1)
        environment.execute(Completion(text=self.working_reply), 1)
        if host.environments().get(self.environment).runs_code:
            assert sessions, "an environment that runs code opens its sandbox session through ctx.open_sandbox"
        environment.close()
        assert all(s.rlm_contract_shutdowns for s in sessions), "close() must release (shut down) the sandbox session"
        environment.close()  # a second close: no error

    def test_a_declared_reply_format_has_a_grammar_or_a_schema(self, make_environment) -> None:
        declared = getattr(make_environment(context="x"), "reply_format", None)
        if declared is None:
            pytest.skip("no reply_format declared: no connector is asked to enforce a shape")
        assert isinstance(declared, ReplyFormat) and declared.kinds, declared
        if declared.json_schema is not None:
            json.dumps(dict(declared.json_schema))  # it is sent as JSON

    def test_synthesize_returns_text_or_none(self, make_environment) -> None:
        environment = make_environment(context="x", root_replies=("my best guess",))
        environment.start()
        environment.messages(1)
        environment.execute(Completion(text=self.working_reply), 1)
        answer = environment.synthesize()
        assert answer is None or (isinstance(answer, str) and answer)

    # ------------------------------------------------------------------ end to end, through the runner

    def test_a_run_through_the_runner_finishes_and_is_recorded(self, tmp_path: Path, monkeypatch) -> None:
        monkeypatch.chdir(tmp_path)
        runner = isolated_runner(tmp_path, plugins=self.distribution, sandbox=self.sandbox)
        result, events, _ = run_scripted(runner, "What is the answer?", [self.working_reply, self.final_reply],
                                         context="a small context", environment=self.environment)
        assert result.completed and result.final_response == self.final_answer, result.error
        assert result.steps == 2 and result.environment == self.environment
        kinds = [event["type"] for event in trajectory(result)]
        assert kinds[0] == "run_start" and kinds[-1] == "final" and kinds.count("step") == 2

    def test_a_run_that_never_finishes_stops_at_max_steps(self, tmp_path: Path, monkeypatch) -> None:
        monkeypatch.chdir(tmp_path)
        runner = isolated_runner(tmp_path, plugins=self.distribution, sandbox=self.sandbox)
        replies = [self.working_reply] * 3 + ["best guess"]
        result, _, _ = run_scripted(runner, "What is the answer?", replies, context="ctx",
                                    environment=self.environment, max_steps=3)
        assert not result.completed and result.termination_reason == "max_steps" and result.steps == 3


def _tracked(open_sandbox: Any, sessions: list[Any]) -> Any:
    """``open_sandbox`` recording each session it opens in ``sessions``, and each session's shutdowns."""

    def open_tracked() -> Any:
        session = open_sandbox()
        real_shutdown = session.shutdown
        session.rlm_contract_shutdowns = 0

        def shutdown() -> None:
            session.rlm_contract_shutdowns += 1
            real_shutdown()

        session.shutdown = shutdown
        sessions.append(session)
        return session

    return open_tracked


def _default_rewards() -> Any:
    from rlm_host.config.schema import RewardProfile

    return RewardProfile()
