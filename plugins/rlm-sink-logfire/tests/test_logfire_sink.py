"""The ``logfire`` sink keeps the sink protocol and sends each run tree, through a local Logfire SDK instance, as
Logfire spans with the host's ids — checked on what a loopback receiver decoded (no Logfire server here)."""

from __future__ import annotations

import json
import logging
import warnings as warnings_module
import time
from pathlib import Path

import pytest

from rlm_host import RunEvent
from rlm_host.sdk.observability import trace_id_for
from rlm_host.testing import SinkContract
from rlm_sink_logfire.settings import LogfireSinkSettings
from rlm_sink_logfire.sink import check, create
from rlm_sink_otel.testing import OTLPReceiver, free_port, one_step_run

PLUGIN = "rlm-sink-logfire"
TOKEN = "pylf_v1_us_testtoken0000"
INFO = {"project_name": "rlm-test", "project_url": "http://127.0.0.1/rlm-test"}


def logfire_receiver() -> OTLPReceiver:
    receiver = OTLPReceiver().start()
    receiver.respond("/v1/info", json=INFO)  # the SDK checks the token there first
    return receiver


def assert_logfire_trace(receiver: OTLPReceiver, events: list) -> None:
    root = next(e for e in events if e.type == "run_start" and e.parent_run_id is None)
    final = next(e for e in events if e.type == "final" and e.parent_run_id is None)
    trace_id = trace_id_for(root.root_run_id)
    mine = receiver.trace_spans(events)
    assert not receiver.errors
    by_id = {s["span_id"]: s for s in mine}
    assert len(by_id) == len(mine), "every span is sent once (Logfire's pending spans are not)"
    assert all(s["attributes"]["logfire.span_type"] == "span" and s["scope"] == "rlm" for s in mine)
    assert all(s["resource"]["service.name"] == "rlm" for s in mine)
    agents = {s["attributes"]["rlm.run_id"]: s for s in mine if s["name"].startswith("invoke_agent")}
    assert set(agents) == {e.run_id for e in events}
    top = agents[root.run_id]
    assert top["parent_span_id"] is None and top["status"]["code"] == 1
    assert top["attributes"]["rlm.total_reward"] == float(final.data.get("total_reward") or 0.0)
    assert top["attributes"]["logfire.msg"].startswith(f"invoke_agent {root.data['environment']}: ")
    for run_id, agent in agents.items():
        if run_id != root.run_id:
            tool = by_id[agent["parent_span_id"]]
            assert tool["name"].startswith("execute_tool")
            assert by_id[tool["parent_span_id"]] is agents[tool["attributes"]["rlm.run_id"]]
    chats = [s for s in mine if s["name"].startswith("chat")]
    assert chats and all(s["kind"] == 3 and s["attributes"]["gen_ai.request.model"] for s in chats)
    # the content, in the GenAI fields Logfire's LLM panel reads: every call's messages and reply (a run seen live;
    # a trajectory file keeps no prompt)
    assert not any(e.content for e in events if e.type == "model_call_end") or all(
        json.loads(s["attributes"]["gen_ai.input.messages"]) and s["attributes"]["gen_ai.output.messages"]
        for s in chats)
    assert top["attributes"]["input.value"] == root.data["task"]
    assert top["attributes"]["output.value"] == final.data["final_response"]
    assert all(s["parent_span_id"] is None or s["parent_span_id"] in by_id for s in mine)
    posts = [r for r in receiver.requests if r.path == "/v1/traces"]
    assert posts and {r.headers["authorization"] for r in posts} == {TOKEN}
    assert {r.headers.get("content-encoding") for r in posts} == {"gzip"}


class TestLogfireSink(SinkContract):
    sink = "logfire"
    distribution = PLUGIN

    @pytest.fixture(autouse=True)
    def receiver(self):
        self.server = logfire_receiver()
        yield self.server
        self.server.stop()

    def settings(self, home: Path) -> LogfireSinkSettings:
        return LogfireSinkSettings(token=TOKEN, base_url=self.server.url)

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__LOGFIRE__TOKEN": TOKEN, "RLM_SINK__LOGFIRE__BASE_URL": self.server.url}

    def unreachable_settings(self, home: Path) -> LogfireSinkSettings:
        return LogfireSinkSettings(token=TOKEN, base_url=f"http://127.0.0.1:{free_port()}", flush_seconds=1)

    def secret_environ(self) -> dict[str, str]:
        return {"LOGFIRE_TOKEN": "pylf_v1_us_madeup5c1d"}

    def received(self, home: Path) -> str:
        return self.server.received_text()

    def check_output(self, events, home: Path) -> None:
        assert_logfire_trace(self.server, events)


def _events() -> list[RunEvent]:
    return one_step_run("run_lg")


@pytest.mark.slow  # the flush waits out its 1 s deadline on the SDK's retry
@pytest.mark.parametrize("backend", ["refused", "500"])
def test_a_dead_backend_is_one_warning_and_close_keeps_its_deadline(backend, caplog):
    with logfire_receiver() as receiver:
        url = f"http://127.0.0.1:{free_port()}" if backend == "refused" else receiver.url
        if backend == "500":
            receiver.respond("/v1/traces", status=500)
        with warnings_module.catch_warnings(record=True) as shown:
            warnings_module.simplefilter("default")
            sink = create(LogfireSinkSettings(token=TOKEN, base_url=url, flush_seconds=1), None)
            started = time.monotonic()
            with caplog.at_level(logging.WARNING):
                for event in _events():
                    sink.handle(event)
                sink.close()
                sink.close()
            assert time.monotonic() - started < 2.5
            time.sleep(0.2)  # let the SDK's token check (a thread) finish
        # the SDK's token check warns through `warnings` from its thread: the sink's warning says it instead
        assert not [w for w in shown if "Logfire API is unreachable" in str(w.message)]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings  # the SDK's own lines are folded into it
    assert warnings[0].startswith(f"logfire sink: could not deliver to {url}: ")
    assert "retrying 1 failed export" in warnings[0]


def test_no_global_state_is_left():
    from opentelemetry import trace

    before = trace.get_tracer_provider()
    with logfire_receiver() as receiver:
        sink = create(LogfireSinkSettings(token=TOKEN, base_url=receiver.url), None)
        for event in _events():
            sink.handle(event)
        sink.close()
        assert len(receiver.wait_for_spans(3)) == 3
    assert trace.get_tracer_provider() is before
    import logfire

    assert logfire.DEFAULT_LOGFIRE_INSTANCE.config is not sink.logfire.config


def test_the_doctor_names_a_missing_token_and_never_shows_it(monkeypatch):
    monkeypatch.delenv("LOGFIRE_TOKEN", raising=False)
    monkeypatch.delenv("LOGFIRE_BASE_URL", raising=False)
    state = check(LogfireSinkSettings())
    assert not state.ok and "LOGFIRE_TOKEN not set" in state.detail and "logfire-us.pydantic.dev" in state.detail
    with pytest.raises(RuntimeError, match="LOGFIRE_TOKEN"):
        create(LogfireSinkSettings(), None)
    monkeypatch.setenv("LOGFIRE_TOKEN", "pylf_v1_us_secretvalue")
    with logfire_receiver() as receiver:
        state = check(LogfireSinkSettings(base_url=receiver.url))
        assert state.ok and state.detail == f"token accepted by {receiver.url} (project rlm-test)"
        assert receiver.requests[-1].headers["authorization"] == "pylf_v1_us_secretvalue"
        receiver.respond("/v1/info", status=401, json={"detail": "Invalid token"})
        state = check(LogfireSinkSettings(base_url=receiver.url))
        assert not state.ok and "refused the token" in state.detail
    port = free_port()
    state = check(LogfireSinkSettings(base_url=f"http://127.0.0.1:{port}"))
    assert not state.ok and f"127.0.0.1:{port} unreachable" in state.detail
    assert all("secretvalue" not in f"{s.detail} {s.hint}" for s in [state])


def test_rlm_ids_arrive_unscrubbed_while_a_secret_in_content_is_scrubbed():
    """Logfire's scrubber matches ``session.id`` by its name: the sink keeps rlm's ids and token counts as they are,
    and a task that looks like it holds a password is still redacted by the SDK (in the root's message too)."""
    events = one_step_run("run_scrub")
    events[0].data["task"] = "Log in with the password hunter2, then count the words"
    with logfire_receiver() as receiver:
        sink = create(LogfireSinkSettings(token=TOKEN, base_url=receiver.url), None)
        for event in events:
            sink.handle(event)
        sink.close()
        spans = receiver.trace_spans(events)
    top = next(s for s in spans if s["name"].startswith("invoke_agent"))
    chat = next(s for s in spans if s["name"].startswith("chat"))
    assert top["attributes"]["session.id"] == top["attributes"]["gen_ai.conversation.id"] == "run_scrub"
    assert (chat["attributes"]["gen_ai.usage.input_tokens"], chat["attributes"]["gen_ai.usage.output_tokens"]) == (5, 2)
    assert top["attributes"]["input.value"] == top["attributes"]["rlm.task"] == "[Scrubbed due to 'password']"
    assert top["attributes"]["logfire.msg"] == "invoke_agent pure_rlm: [Scrubbed due to 'password'] (reward 0.5)"
    assert "hunter2" not in json.dumps(top)
    scrubbed = json.loads(top["attributes"]["logfire.scrubbed"])
    assert {note["matched_substring"] for note in scrubbed} == {"password"}
    assert {note["path"][-1] for note in scrubbed} == {"input.value", "rlm.task"}
