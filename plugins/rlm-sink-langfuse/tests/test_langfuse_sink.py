"""The ``langfuse`` sink keeps the sink protocol and sends, through the Langfuse SDK, one Langfuse trace per run
tree (agent / generation / tool observations) and its ``reward`` / ``completed`` scores — checked on what a
loopback receiver decoded from the SDK's requests (no Langfuse server here)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pytest

from rlm_host.sdk.observability import SpanRecord, trace_id_for
from rlm_host.testing import SinkContract
from rlm_sink_langfuse.mapping import langfuse_attributes
from rlm_sink_langfuse.settings import LangfuseSinkSettings
from rlm_sink_langfuse.sink import check, create
from rlm_sink_otel.testing import OTLPReceiver, free_port, one_step_run

PLUGIN = "rlm-sink-langfuse"
INGESTION = "/api/public/ingestion"  # SDK v4 posts scores here (a batch of events)
SCORES = "/api/public/scores"  # SDK v5 posts them here (a list of scores)


def new_key() -> str:
    return f"pk-lf-test-{uuid.uuid4().hex[:10]}"  # the SDK keeps one client per public key and process


def langfuse_receiver() -> OTLPReceiver:
    receiver = OTLPReceiver().start()
    receiver.respond(INGESTION, status=207, json={"successes": [], "errors": []})
    receiver.respond(SCORES, status=202, json={"message": "Accepted"})
    return receiver


def scores_of(receiver: OTLPReceiver) -> list[dict]:
    batches = [json.loads(r.body) for r in receiver.requests if r.path == INGESTION]
    v4 = [item["body"] for batch in batches for item in batch["batch"] if item["type"] == "score-create"]
    return v4 + [score for r in receiver.requests if r.path == SCORES for score in json.loads(r.body)]


def assert_langfuse_trace(receiver: OTLPReceiver, events: list) -> None:
    """One Langfuse trace per run tree: observations typed and nested, the trace named, the scores sent."""
    root = next(e for e in events if e.type == "run_start" and e.parent_run_id is None)
    final = next(e for e in events if e.type == "final" and e.parent_run_id is None)
    trace_id = trace_id_for(root.root_run_id)
    mine = receiver.trace_spans(events)
    assert not receiver.errors
    by_id = {s["span_id"]: s for s in mine}
    assert len(by_id) == len(mine), "every span is sent once"
    types = {s["name"].split()[0]: s["attributes"]["langfuse.observation.type"] for s in mine}
    assert types == {"invoke_agent": "agent", "chat": "generation", "execute_tool": "tool"}
    agents = {s["attributes"]["rlm.run_id"]: s for s in mine if s["name"].startswith("invoke_agent")}
    assert set(agents) == {e.run_id for e in events}
    top = agents[root.run_id]
    assert top["parent_span_id"] is None
    attrs = top["attributes"]
    # the trace's input/output: its root observation's (SDK v5 has no trace-level attributes for them)
    assert attrs["langfuse.trace.name"] == root.data["task"] == attrs["langfuse.observation.input"]
    assert attrs["langfuse.observation.output"] == final.data["final_response"]
    if "langfuse.trace.input" in attrs or "langfuse.trace.output" in attrs:  # SDK v4
        assert attrs["langfuse.trace.input"] == root.data["task"]
        assert attrs["langfuse.trace.output"] == final.data["final_response"]
    assert "rlm" in attrs["langfuse.trace.tags"] and attrs["langfuse.internal.is_app_root"] is True
    for run_id, agent in agents.items():
        if run_id != root.run_id:  # a child run nests under its parent's execute_tool observation
            tool = by_id[agent["parent_span_id"]]
            assert tool["attributes"]["langfuse.observation.type"] == "tool"
            assert by_id[tool["parent_span_id"]] is agents[tool["attributes"]["rlm.run_id"]]
            assert "langfuse.trace.name" not in agent["attributes"]
            assert "langfuse.internal.is_app_root" not in agent["attributes"]
    generations = [s["attributes"] for s in mine if s["name"].startswith("chat")]
    assert all(g["langfuse.observation.model.name"] for g in generations)
    usage = [json.loads(g["langfuse.observation.usage_details"]) for g in generations
             if "langfuse.observation.usage_details" in g]
    assert usage and all(u["total"] == u["input"] + u["output"] for u in usage)
    tools = [s["attributes"] for s in mine if s["name"].startswith("execute_tool")]
    assert any(t.get("langfuse.observation.input", "").startswith("print(") for t in tools)
    # every generation shows the messages sent (a chat Langfuse renders) and the reply (a run seen live: a
    # trajectory file keeps no prompt)
    live = any(e.content for e in events if e.type == "model_call_end")
    for generation in generations if live else []:
        sent = json.loads(generation["langfuse.observation.input"])
        assert sent and all(set(m) == {"role", "content"} and m["content"] for m in sent)
        assert generation["langfuse.observation.output"]
    assert not live or any(json.loads(g["langfuse.observation.input"])[0]["role"] == "system" for g in generations)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and len([s for s in scores_of(receiver) if s["traceId"] == trace_id]) < 2:
        time.sleep(0.05)
    scores = {s["name"]: s for s in scores_of(receiver) if s["traceId"] == trace_id}
    assert scores["reward"]["value"] == float(final.data.get("total_reward") or 0.0)
    assert scores["reward"]["dataType"] == "NUMERIC"
    assert scores["completed"] == {**scores["completed"], "value": 1.0, "dataType": "BOOLEAN"}
    auth = {r.headers.get("authorization", "").split()[0] for r in receiver.requests if r.method == "POST"}
    assert auth == {"Basic"}


class TestLangfuseSink(SinkContract):
    sink = "langfuse"
    distribution = PLUGIN

    @pytest.fixture(autouse=True)
    def receiver(self):
        self.server, self.key = langfuse_receiver(), new_key()
        yield self.server
        self.server.stop()

    def settings(self, home: Path) -> LangfuseSinkSettings:
        return LangfuseSinkSettings(public_key=self.key, secret_key="sk-lf-test", base_url=self.server.url)

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__LANGFUSE__PUBLIC_KEY": self.key, "RLM_SINK__LANGFUSE__SECRET_KEY": "sk-lf-test",
                "RLM_SINK__LANGFUSE__BASE_URL": self.server.url}

    def unreachable_settings(self, home: Path) -> LangfuseSinkSettings:
        return LangfuseSinkSettings(public_key=new_key(), secret_key="sk-lf-test",
                                    base_url=f"http://127.0.0.1:{free_port()}", timeout=1)

    def secret_environ(self) -> dict[str, str]:
        return {"LANGFUSE_SECRET_KEY": "sk-lf-made-up-7f3a", "LANGFUSE_PUBLIC_KEY": "pk-lf-made-up-91c2"}

    def received(self, home: Path) -> str:
        return self.server.received_text()

    def check_output(self, events, home: Path) -> None:
        assert_langfuse_trace(self.server, events)


def _root_events():
    return one_step_run("run_lf", settings={"labels": {"session": "s-1", "team": "a"}})


# HTTP 500: the SDK's exporter retries for its 1 s timeout
@pytest.mark.parametrize("backend", ["refused", pytest.param("500", marks=pytest.mark.slow)])
def test_a_dead_backend_is_one_warning_and_close_keeps_its_deadline(backend, caplog):
    with langfuse_receiver() as receiver:
        url = f"http://127.0.0.1:{free_port()}" if backend == "refused" else receiver.url
        if backend == "500":
            receiver.respond("/api/public/otel/v1/traces", status=500)
        sink = create(LangfuseSinkSettings(public_key=new_key(), secret_key="s", base_url=url, timeout=1,
                                           flush_seconds=2), None)
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="rlm.sinks"):
            for event in _root_events():
                sink.handle(event)
            sink.close()
            sink.close()
        assert time.monotonic() - started < 3.5
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlm.sinks" and r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("langfuse sink: ") and url in warnings[0]
    assert ("HTTP 500" if backend == "500" else "Connection refused") in warnings[0]


@pytest.mark.slow  # the SDK's score queue is flushed every 0.5 s
def test_the_root_span_carries_session_metadata_and_the_scores_follow_the_reward():
    with langfuse_receiver() as receiver:
        sink = create(LangfuseSinkSettings(public_key=new_key(), secret_key="s", base_url=receiver.url), None)
        for event in _root_events():
            sink.handle(event)
        sink.close()
        root = next(s for s in receiver.spans if s["name"] == "invoke_agent pure_rlm")
        attrs = root["attributes"]
        assert root["trace_id"] == trace_id_for("run_lf")
        assert attrs["session.id"] == "s-1" and attrs["langfuse.trace.metadata.team"] == "a"
        assert attrs["langfuse.trace.tags"] == ["rlm", "pure_rlm", "native"]
        scores = {s["name"]: s["value"] for s in scores_of(receiver)}
        assert scores == {"reward": 0.5, "completed": 1.0}


def test_an_error_span_is_an_error_observation():
    record = SpanRecord("a" * 32, "b" * 16, "c" * 16, "chat m", "client", 1, 2, "r",
                        {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}, status="error",
                        status_message="HTTP 429")
    attrs = langfuse_attributes(record)
    assert attrs["langfuse.observation.type"] == "generation" and attrs["langfuse.observation.level"] == "ERROR"
    assert attrs["langfuse.observation.status_message"] == "HTTP 429"
    assert "langfuse.trace.name" not in attrs and "langfuse.observation.usage_details" not in attrs


def test_the_doctor_names_missing_keys_and_never_shows_a_value(monkeypatch):
    for name in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL", "LANGFUSE_HOST"):
        monkeypatch.delenv(name, raising=False)
    state = check(LangfuseSinkSettings(base_url="http://127.0.0.1:9"))
    assert not state.ok and "LANGFUSE_PUBLIC_KEY" in state.detail and "LANGFUSE_SECRET_KEY" in state.detail
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-visible-value")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-hidden-value")
    monkeypatch.delenv("LANGFUSE_SECRET_KEY")
    with pytest.raises(RuntimeError, match="LANGFUSE_SECRET_KEY"):  # the host then skips the sink with a notice
        create(LangfuseSinkSettings(), None)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-hidden-value")
    port = free_port()
    state = check(LangfuseSinkSettings(base_url=f"http://127.0.0.1:{port}"))
    assert not state.ok and f"127.0.0.1:{port} unreachable" in state.detail
    with langfuse_receiver() as receiver:
        state = check(LangfuseSinkSettings(base_url=receiver.url))
    assert state.ok and state.detail == f"keys set; {receiver.url} reachable"
    assert "value" not in f"{state.detail} {state.hint}"


def test_no_global_tracer_provider_is_set():
    from opentelemetry import trace

    before = trace.get_tracer_provider()
    with langfuse_receiver() as receiver:
        sink = create(LangfuseSinkSettings(public_key=new_key(), secret_key="s", base_url=receiver.url), None)
        for event in _root_events():
            sink.handle(event)
        sink.close()
        assert len(receiver.wait_for_spans(3)) == 3
    assert trace.get_tracer_provider() is before


def test_using_the_sink_leaves_the_httpx_logger_to_rlm():
    import logging

    with langfuse_receiver() as receiver:
        sink = create(LangfuseSinkSettings(public_key=f"pk-lf-{uuid.uuid4().hex[:8]}", secret_key="sk-lf-x",
                                           base_url=receiver.url), None)
        sink.close()
    httpx = logging.getLogger("httpx")
    assert httpx.level == logging.NOTSET and not httpx.handlers
