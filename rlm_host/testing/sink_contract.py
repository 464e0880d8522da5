"""``SinkContract``: the test suite of the observability sink protocol (``rlm_host.sdk.observability.Sink``).

A sink plugin proves it keeps the protocol by subclassing it in its tests::

    from rlm_host.testing import SinkContract


    class TestMySink(SinkContract):
        sink = "mine"                        # the registered name
        distribution = "rlm-sink-mine"       # RLM_PLUGINS: the distribution registering it ("" for built-ins)

        def settings(self, home):            # optional: the [sink.mine] section to build it with
            return MySinkSettings(endpoint=...)

        def check_output(self, events, home):
            ...                              # assert the sink recorded what ``events`` (one run tree) hold

pytest then feeds the sink the events of real runs (a scripted root run with a child run, in the ``process``
sandbox) and checks what every sink owes the runner: built by its registered factory as ``factory(settings,
HostServices(home))``; events it does not know are ignored; ``close()`` is idempotent, also with no event;
concurrent ``handle`` calls from many threads are safe; named in ``run.sinks``, it receives a real run; with
``unreachable_settings`` (a backend that is down) it never raises and ``close()`` gives up within
``CLOSE_SECONDS``; its readiness check (``rlm plugins doctor``) answers quickly and never shows the value of a
``secret_environ`` credential; with content capture off (the GenAI variable, or its ``capture_content``
setting), nothing of a real run's content reaches what ``received`` reads back from its backend.
``feed_trajectory(sink, source)`` replays a saved run into any sink.
Real example: plugins/rlm-sink-local/tests/test_local_sink.py.
"""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any, Iterable, Optional, Union

import pytest

from rlm_host.components import Readiness
from rlm_host.events import RunEvent, Sink
from rlm_host.observability.content import CAPTURE_ENV
from rlm_host.plugins.host import PluginHost
from rlm_host.results import RunResult
from rlm_host.services import HostServices
from rlm_host.testing.engine import isolated_runner, run_scripted
from rlm_host.trajectory.store import RunStore

#: A root run that calls a child run (rlm_query) and then answers: every common event type appears.
ROOT_REPLIES = [
    "```repl\nprint(len(context))\nnote = rlm_query('Summarise the context', context)\nprint(note)\n```",
    "FINAL(42)",
]
CHILD_REPLIES = ["```repl\nprint(context[:10])\n```", "FINAL('a summary')"]
#: Seconds a sink may take to give up on a dead backend, and a readiness check to answer.
CLOSE_SECONDS = 10.0


def content_run(mark: str) -> dict[str, Any]:
    """``run_scripted`` arguments of a run whose every kind of content carries ``mark``: the task, the context,
    the code and its output, a sub-call's prompt and reply, a failed sub-call whose error quotes its prompt, an
    exception naming a variable's value, and the answer."""
    code = (f"note = 'code-{mark}'\nprint('output-{mark}')\nprint(llm_query('prompt-{mark}'))\n"
            f"try:\n    llm_query('refused-{mark}')\nexcept Exception:\n    print('refused')\n")
    return {"task": f"What follows task-{mark}?", "context": f"a context holding context-{mark}",
            "root_replies": [f"```repl\n{code}```", f"```repl\nraise ValueError('error-{mark} ' + note)\n```",
                             f"FINAL(answer-{mark})"],
            "sub_rules": [{"match": "prompt-", "text": f"reply-{mark}"},
                          {"match": "refused-",
                           "error": f"HTTP 400: the server cannot read 'refused-{mark}'"}]}


def _recorded_path(result: RunResult) -> Path:
    """The trajectory file of a recorded run."""
    assert result.trajectory_path is not None, "the run was not recorded (no trajectory_path)"
    return Path(result.trajectory_path)


def feed_trajectory(sink: Sink, source: Union[RunResult, str, Path, Iterable[RunEvent]]) -> list[RunEvent]:
    """Send a saved run's events to ``sink`` in order (a RunResult, a trajectory path, or events); return them."""
    if isinstance(source, RunResult):
        source = _recorded_path(source)
    if isinstance(source, (str, Path)):
        path = Path(source)
        events = RunStore(path.parent).load(path)
    else:
        events = list(source)
    for event in events:
        sink.handle(event)
    return events


class SinkContract:
    """Subclass in a ``Test…`` class, set ``sink`` and ``distribution`` and implement ``check_output``."""

    sink: str = ""
    distribution: str = ""

    def settings(self, home: Path) -> Any:
        """The settings the sink is built with (default: its settings model's defaults, or None)."""
        spec = PluginHost(environ={"RLM_PLUGINS": self.distribution}).sinks().get(self.sink)
        model = spec.settings_model()
        return model() if model is not None else None

    def check_output(self, events: list[RunEvent], home: Path) -> None:
        """Assert that the sink recorded what ``events`` (the whole event stream of one run tree) hold."""
        raise NotImplementedError("a SinkContract subclass says what its sink must have recorded")

    # ------------------------------------------------------------------ fixtures

    @pytest.fixture
    def home(self, tmp_path: Path) -> Path:
        return tmp_path / "sink-home"

    @pytest.fixture
    def make_sink(self, home: Path):
        """``make_sink()`` → the sink built by its registered factory; every sink made is closed afterwards."""
        made: list[Sink] = []

        def make() -> Sink:
            spec = PluginHost(environ={"RLM_PLUGINS": self.distribution}).sinks().get(self.sink)
            sink: Sink = spec.create(self.settings(home), HostServices(home=home))
            made.append(sink)
            return sink

        yield make
        for sink in made:
            sink.close()

    @pytest.fixture
    def recorded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunResult:
        """A real run tree (root and one child run), recorded in its own run home."""
        monkeypatch.chdir(tmp_path)
        runner = isolated_runner(tmp_path / "recorded", sandbox="process", environ={"RLM_RUN__SINKS": "[]"})
        result, _, _ = run_scripted(runner, "What is the answer?", ROOT_REPLIES[:1] + CHILD_REPLIES + ROOT_REPLIES[1:],
                                    context="a context of a few words", max_depth=1)
        assert result.completed, result.error
        return result

    # ------------------------------------------------------------------ the protocol

    def test_is_registered_and_built_by_its_factory(self, make_sink) -> None:
        sink = make_sink()
        assert callable(getattr(sink, "handle", None)) and callable(getattr(sink, "close", None))

    def test_records_a_real_run_tree(self, make_sink, recorded: RunResult, home: Path) -> None:
        sink = make_sink()
        events = feed_trajectory(sink, recorded)
        assert {e.type for e in events} >= {"run_start", "step", "sub_call", "final"}
        assert len({e.run_id for e in events}) == 2, "the recorded tree has a root and a child run"
        sink.close()
        self.check_output(events, home)

    def test_ignores_event_types_it_does_not_know(self, make_sink, recorded: RunResult, home: Path) -> None:
        sink = make_sink()
        path = _recorded_path(recorded)
        events = RunStore(path.parent).load(path)
        root = events[0]
        future = RunEvent.model_construct(
            type="from_a_future_version",  # type: ignore[arg-type]  # not an EventType: a newer host's event
            operation=None, run_id=root.run_id, root_run_id=root.root_run_id, parent_run_id=None, depth=0, seq=1,
            ts=root.ts, data={"anything": [1, 2]})
        feed_trajectory(sink, events[:1] + [future] + events[1:])  # in the middle of a real run: never raises
        sink.close()
        self.check_output(events, home)  # … and the run is recorded as if the unknown event had not been there

    def test_close_is_idempotent_also_with_no_event(self, make_sink, recorded: RunResult, home: Path) -> None:
        idle = make_sink()
        started = time.monotonic()
        idle.close()
        idle.close()
        assert time.monotonic() - started < CLOSE_SECONDS, "closing a sink that got no event must return at once"
        used = make_sink()
        events = feed_trajectory(used, recorded)
        used.close()
        used.close()
        self.check_output(events, home)  # the second close neither lost nor repeated what the first delivered

    def test_concurrent_handle_calls_are_safe(self, make_sink, recorded: RunResult, home: Path) -> None:
        sink = make_sink()
        path = _recorded_path(recorded)
        events = RunStore(path.parent).load(path)
        copies = [_renamed(events, f"_t{i}") for i in range(8)]
        errors: list[BaseException] = []

        def feed(copy: list[RunEvent]) -> None:
            try:
                feed_trajectory(sink, copy)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=feed, args=(copy,)) for copy in copies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        sink.close()
        assert not errors, errors
        for copy in copies:
            self.check_output(copy, home)

    def test_named_in_run_sinks_it_receives_a_real_run(self, tmp_path: Path, monkeypatch, home: Path) -> None:
        monkeypatch.chdir(tmp_path)
        environ = {"RLM_RUN__SINKS": f'["{self.sink}"]', **self.run_environ(home)}
        runner = isolated_runner(tmp_path, plugins=self.distribution, sandbox="process", environ=environ)
        runner.home = home
        result, events, _ = run_scripted(runner, "What is the answer?", ["```repl\nprint(1)\n```", "FINAL(42)"],
                                         context="ctx")
        assert result.completed, result.error
        self.check_output(events, home)

    def run_environ(self, home: Path) -> dict[str, str]:
        """``RLM_SINK__<NAME>__…`` variables configuring the sink for the end-to-end run (default: none)."""
        return {}

    # ------------------------------------------------------------------ failure containment and doctor

    def unreachable_settings(self, home: Path) -> Any:
        """Settings pointing the sink at a backend that is down (e.g. a closed loopback port); None skips the
        tests of an unreachable backend (a sink with no backend, like ``local``)."""
        return None

    def secret_environ(self) -> dict[str, str]:
        """Credential variables the sink reads (name → a made-up value): its readiness check may name them but
        must never show a value."""
        return {}

    def test_an_unreachable_backend_never_raises_and_close_returns(self, home: Path, recorded: RunResult) -> None:
        settings = self.unreachable_settings(home)
        if settings is None:
            pytest.skip("this sink has no remote backend")
        spec = PluginHost(environ={"RLM_PLUGINS": self.distribution}).sinks().get(self.sink)
        sink: Sink = spec.create(settings, HostServices(home=home))
        started = time.monotonic()
        feed_trajectory(sink, recorded)  # must not raise: the host would disable the sink, losing the rest
        sink.close()
        sink.close()
        assert time.monotonic() - started < CLOSE_SECONDS, "a sink must give up on a dead backend within seconds"

    # ------------------------------------------------------------------ content capture off

    def received(self, home: Path) -> Optional[str]:
        """Everything the sink's backend has received, as one text (what it stored, or the requests it got);
        None for a sink that sends nothing off this machine (``local``), which the content switch leaves alone."""
        return None

    @pytest.mark.parametrize("switch", ["variable", "setting"])
    def test_with_content_capture_off_no_content_leaves(self, switch: str, tmp_path: Path, monkeypatch,
                                                        home: Path) -> None:
        """``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false``, or the sink's ``capture_content = false``:
        none of a real run's task, context, prompts, replies, code, output, answer, or error text quoting them
        reaches the backend (spans, span events, metrics, params, tags, artifacts); the run itself still does."""
        if self.received(home) is None:
            pytest.skip("this sink sends nothing off this machine")
        monkeypatch.chdir(tmp_path)
        environ = {"RLM_RUN__SINKS": f'["{self.sink}"]', **self.run_environ(home)}
        if switch == "variable":
            monkeypatch.setenv(CAPTURE_ENV, "false")
        else:
            environ[f"RLM_SINK__{self.sink.upper()}__CAPTURE_CONTENT"] = "false"
        runner = isolated_runner(tmp_path, plugins=self.distribution, sandbox="process", environ=environ)
        runner.home = home
        mark = uuid.uuid4().hex[:12]
        arguments = content_run(mark)
        result, _, _ = run_scripted(runner, arguments.pop("task"), arguments.pop("root_replies"), **arguments)
        assert result.completed and mark in str(result.final_response), result.error
        text = self.received(home) or ""
        where = text.find(mark)
        assert where < 0, f"content left with capture off: …{text[max(0, where - 300):where + 80]}…"
        assert result.run_id in text, "the run itself (ids, tokens, timings) still goes to the backend"

    def test_readiness_names_credentials_but_never_their_values(self, home: Path, monkeypatch) -> None:
        secrets = self.secret_environ()
        for name, value in secrets.items():
            monkeypatch.setenv(name, value)
        spec = PluginHost(environ={"RLM_PLUGINS": self.distribution}).sinks().get(self.sink)
        for settings in (self.settings(home), self.unreachable_settings(home)):
            started = time.monotonic()
            state = spec.readiness(settings)
            assert isinstance(state, Readiness) and state.detail
            assert time.monotonic() - started < CLOSE_SECONDS, "rlm plugins doctor must stay quick"
            shown = f"{state.detail} {state.hint}"
            for value in secrets.values():
                assert value not in shown, "a readiness check printed a credential's value"


def _renamed(events: list[RunEvent], suffix: str) -> list[RunEvent]:
    """The same run tree under other run ids (so concurrent copies are told apart)."""
    renamed = []
    for event in events:
        update: dict[str, Any] = {"run_id": event.run_id + suffix, "root_run_id": event.root_run_id + suffix,
                                  "parent_run_id": event.parent_run_id + suffix
                                  if event.parent_run_id else None}
        data = dict(event.data)
        for key in ("run_id", "parent_run_id", "child_run_id"):
            if isinstance(data.get(key), str):
                data[key] += suffix
        renamed.append(event.model_copy(update={**update, "data": data}))
    return renamed
