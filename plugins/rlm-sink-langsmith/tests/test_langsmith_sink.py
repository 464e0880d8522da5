"""The ``langsmith`` sink keeps the sink protocol and posts, through the LangSmith SDK, each run tree as LangSmith
runs (chain / llm / tool, nested by dotted order) with ``reward`` / ``completed`` feedback — checked on what a
loopback server decoded from the SDK's multipart and feedback requests (no LangSmith server here)."""

from __future__ import annotations

import email
import json
import logging
import time
from pathlib import Path

import pytest

from rlm_host import RunEvent
from rlm_host.sdk.observability import trace_id_for
from rlm_host.testing import SinkContract
from rlm_sink_langsmith.settings import LangSmithSinkSettings
from rlm_sink_langsmith.sink import check, create
from rlm_sink_otel.testing import OTLPReceiver, free_port, one_step_run

PLUGIN = "rlm-sink-langsmith"
KEY = "lsv2_pt_test_key"
PROJECT_ID = "1b1c5ad2-3e2b-4b51-9a55-0d9a8b0c5f11"


def langsmith_server(project: str = "rlm") -> OTLPReceiver:
    """A loopback HTTP server answering the LangSmith endpoints the SDK calls, recording every request."""
    server = OTLPReceiver().start()
    server.respond("/info", json={"version": "0.10.0"})
    server.respond("/runs/multipart", status=202, json={})
    server.respond("/sessions", json=[{"id": PROJECT_ID, "name": project, "start_time": "2026-01-01T00:00:00",
                                       "tenant_id": PROJECT_ID, "reference_dataset_id": None}])
    server.respond("/feedback", json={})
    return server


def decode_runs(server: OTLPReceiver) -> dict[str, dict]:
    """The runs of every ``POST /runs/multipart``: ``post.<id>`` parts, with their inputs / outputs / extra."""
    runs: dict[str, dict] = {}
    for request in [r for r in server.requests if r.path == "/runs/multipart"]:
        head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
        for part in email.message_from_bytes(head + request.body).walk():
            if part.is_multipart():
                continue
            name = part.get_param("name", header="content-disposition")
            op, run_id, *field = name.split(".")
            assert op == "post"
            value = json.loads(part.get_payload(decode=True))
            runs.setdefault(run_id, {}).update({field[0]: value} if field else value)
    return runs


def feedback_of(server: OTLPReceiver) -> list[dict]:
    return [json.loads(r.body) for r in server.requests if r.path == "/feedback" and r.method == "POST"]


def assert_langsmith_runs(server: OTLPReceiver, events: list) -> None:
    root = next(e for e in events if e.type == "run_start" and e.parent_run_id is None)
    final = next(e for e in events if e.type == "final" and e.parent_run_id is None)
    otel_trace = trace_id_for(root.root_run_id)
    runs = [r for r in decode_runs(server).values() if r["extra"]["metadata"]["otel_trace_id"] == otel_trace]
    by_id = {r["id"]: r for r in runs}
    top = [r for r in runs if r["parent_run_id"] is None]
    assert len(top) == 1 and top[0]["run_type"] == "chain" and top[0]["trace_id"] == top[0]["id"]
    top = top[0]
    assert top["inputs"] == {"task": root.data["task"]}
    assert top["outputs"] == {"final_response": final.data["final_response"]}
    assert top["session_name"] == "rlm" and "rlm" in top["tags"]
    assert {r["run_type"] for r in runs} == {"chain", "llm", "tool"}
    agents = {r["extra"]["metadata"]["rlm.run_id"]: r for r in runs if r["name"].startswith("invoke_agent")}
    assert set(agents) == {e.run_id for e in events}
    for run in runs:
        assert run["trace_id"] == top["id"] and run["start_time"] <= run["end_time"]
        if run is not top:  # nested by parent and by dotted order
            parent = by_id[run["parent_run_id"]]
            assert run["dotted_order"].startswith(parent["dotted_order"] + ".")
            assert run["dotted_order"].endswith("Z" + run["id"])
    for run_id, agent in agents.items():
        if agent is not top:  # a child run under the tool run of its parent's step
            assert by_id[agent["parent_run_id"]]["run_type"] == "tool"
    llms = [r for r in runs if r["run_type"] == "llm"]
    assert all(r["extra"]["metadata"]["ls_model_name"] for r in llms)
    usage = [r["extra"]["metadata"]["usage_metadata"] for r in llms if "usage_metadata" in r["extra"]["metadata"]]
    assert usage and all(u["total_tokens"] == u["input_tokens"] + u["output_tokens"] for u in usage)
    assert any(r["inputs"].get("code", "").startswith("print(") for r in runs if r["run_type"] == "tool")
    # every model run shows the messages sent (root turns too: the system prompt first) and the reply (a run seen
    # live: a trajectory file keeps no prompt)
    live = any(e.content for e in events if e.type == "model_call_end")
    for run in llms if live else []:
        assert run["inputs"]["messages"] and all(m["content"] for m in run["inputs"]["messages"])
        assert run["outputs"]["choices"][0]["message"]["content"]
    assert not live or any(r["inputs"]["messages"][0]["role"] == "system" for r in llms)
    feedback = {f["key"]: f for f in feedback_of(server) if f["run_id"] == top["id"]}
    assert feedback["reward"]["score"] == float(final.data.get("total_reward") or 0.0)
    assert feedback["completed"]["score"] == 1.0
    assert {f["session_id"] for f in feedback.values()} == {PROJECT_ID}
    assert {r.headers.get("x-api-key") for r in server.requests} == {KEY}


class TestLangSmithSink(SinkContract):
    sink = "langsmith"
    distribution = PLUGIN

    @pytest.fixture(autouse=True)
    def receiver(self):
        self.server = langsmith_server()
        yield self.server
        self.server.stop()

    def settings(self, home: Path) -> LangSmithSinkSettings:
        return LangSmithSinkSettings(api_key=KEY, api_url=self.server.url, project="rlm")

    def run_environ(self, home: Path) -> dict[str, str]:
        return {"RLM_SINK__LANGSMITH__API_KEY": KEY, "RLM_SINK__LANGSMITH__API_URL": self.server.url,
                "RLM_SINK__LANGSMITH__PROJECT": "rlm"}

    def unreachable_settings(self, home: Path) -> LangSmithSinkSettings:
        return LangSmithSinkSettings(api_key=KEY, api_url=f"http://127.0.0.1:{free_port()}", timeout=1)

    def secret_environ(self) -> dict[str, str]:
        return {"LANGSMITH_API_KEY": "lsv2_pt_madeup_4d2e", "LANGCHAIN_API_KEY": "lsv2_pt_madeup_9b17"}

    def received(self, home: Path) -> str:
        return self.server.received_text()

    def check_output(self, events, home: Path) -> None:
        assert_langsmith_runs(self.server, events)


def _events() -> list[RunEvent]:
    return one_step_run("run_ls")


@pytest.mark.parametrize("backend", ["refused", "500"])
def test_a_dead_backend_is_one_warning_and_the_sink_stops_trying(backend, caplog):
    with langsmith_server() as server:
        url = f"http://127.0.0.1:{free_port()}" if backend == "refused" else server.url
        if backend == "500":
            server.respond("/runs/multipart", status=500)
        sink = create(LangSmithSinkSettings(api_key=KEY, api_url=url, timeout=1), None)
        started = time.monotonic()
        with caplog.at_level(logging.WARNING):
            for _ in range(2):  # a second run tree is not tried again
                for event in _events():
                    sink.handle(event)
            sink.close()
            sink.close()
        assert time.monotonic() - started < 3
        posts = [r for r in server.requests if r.path == "/runs/multipart"]
        assert len(posts) == (3 if backend == "500" else 0)  # the SDK's 3 attempts, for the first tree only
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings  # the SDK's own line is folded into it
    assert warnings[0].startswith(f"langsmith sink: could not deliver to {url}: ")
    assert ("Connection refused" if backend == "refused" else "Server error (500)") in warnings[0]
    assert sink.posted == 0 and sink.failures >= 1


def test_runs_left_open_are_posted_by_close_as_errors():
    with langsmith_server() as server:
        sink = create(LangSmithSinkSettings(api_key=KEY, api_url=server.url, project="p2"), None)
        for event in _events()[:2]:
            sink.handle(event)
        assert not decode_runs(server)  # nothing before the root run ends
        sink.close()
        runs = decode_runs(server)
        root = next(r for r in runs.values() if r["parent_run_id"] is None)
        assert len(runs) == 3 and root["error"] == "the run ended without a final event"
        assert root["session_name"] == "p2"
        assert [(f["key"], f["score"]) for f in feedback_of(server)] == [("completed", 0.0)]  # no reward


def test_the_doctor_names_a_missing_key_and_never_shows_it(monkeypatch):
    for name in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    state = check(LangSmithSinkSettings())
    assert not state.ok and "LANGSMITH_API_KEY or LANGCHAIN_API_KEY not set" in state.detail
    with pytest.raises(RuntimeError, match="LANGSMITH_API_KEY"):
        create(LangSmithSinkSettings(), None)
    monkeypatch.setenv("LANGCHAIN_API_KEY", "lsv2_pt_secretvalue")
    with langsmith_server() as server:
        state = check(LangSmithSinkSettings(api_url=server.url))
        assert state.ok and state.detail == f"key set; {server.url} reachable (LangSmith 0.10.0); project rlm"
        assert server.requests[-1].headers["x-api-key"] == "lsv2_pt_secretvalue"
    port = free_port()
    state = check(LangSmithSinkSettings(api_url=f"http://127.0.0.1:{port}"))
    assert not state.ok and f"127.0.0.1:{port} unreachable" in state.detail
    assert "secretvalue" not in f"{state.detail} {state.hint}"
