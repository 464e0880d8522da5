"""The ``otel`` sink's OTLP metrics: a real ``rlm run`` against the loopback receiver (HTTP), the file exporter's
metric lines, gRPC, ``metrics = false``, a metrics endpoint that is down, and the numbers of a run tree with a
child run, from ``model_call_end`` events and from the step / sub_call usage when there are none."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from otel_support import PLUGIN
from rlm_host import RunEvent
from rlm_sink_otel.metrics import model_name, provider_name
from rlm_sink_otel.metrics_export import metrics_endpoint, metrics_file
from rlm_sink_otel.otel_sink import OtelSink
from rlm_sink_otel.settings import OtelSinkSettings
from rlm_sink_otel.sink import create
from rlm_sink_otel.testing import OTLPGrpcReceiver, OTLPReceiver, decode_metrics_body, free_port

REPLIES = ["```repl\nx = llm_query('a question')\nprint(x)\n```", "FINAL(42)"]
CHILD_REPLIES = ["```repl\nx = rlm_query('a sub task')\nprint(x)\n```", "FINAL(7)", "FINAL(42)"]
NAMES = ("rlm.runs", "rlm.steps", "rlm.reward", "rlm.run_duration", "rlm.tokens", "rlm.cost",
         "gen_ai.client.token.usage", "gen_ai.client.operation.duration")


def _events(trajectory: str) -> list[RunEvent]:
    return [RunEvent.model_validate_json(line) for line in Path(trajectory).read_text().splitlines() if line.strip()]


def _run(rlm_cli, rlm_script, monkeypatch, replies=REPLIES, **environ: str):
    monkeypatch.setenv("RLM_RUN__SINKS", '["otel"]')
    monkeypatch.setenv("RLM_TRUST_CONFIG", "1")
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    model = rlm_script(replies, rules=[{"match": "a question", "text": "an answer"}])
    Path("notes.txt").write_text("a context of a few words")
    result = rlm_cli("run", "What?", "--context", "notes.txt", "--model", model, "--sandbox", "process", "--json",
                     plugins=PLUGIN)
    assert result.code == 0, result.err
    run = json.loads(result.out)
    return run, _events(run["trajectory_path"]), result


def _last(metrics: list[dict]) -> dict[str, dict]:
    """The last metric of each name (cumulative: the totals)."""
    return {m["name"]: m for m in metrics}


def _total(metric: dict, **where) -> float:
    points = [p for p in metric["points"] if all(p["attributes"].get(k) == v for k, v in where.items())]
    return sum(p["value"] if "value" in p else p["sum"] for p in points)


def _final_usage(events: list[RunEvent]) -> tuple[int, int]:
    root = next(e for e in events if e.type == "final" and not e.parent_run_id)
    usage = root.data["usage"]
    return (usage["root"]["input_tokens"] + usage["sub"]["input_tokens"],
            usage["root"]["output_tokens"] + usage["sub"]["output_tokens"])


def _assert_run_metrics(metrics: dict[str, dict], run: dict, events: list[RunEvent]) -> None:
    """The instruments carry what the trajectory says about this one root run (and its children)."""
    model = run["model"].split(":", 1)[1]  # scripted:/…/script-1.json → /…/script-1.json
    final = next(e for e in events if e.type == "final" and not e.parent_run_id).data
    assert set(NAMES) <= set(metrics)
    runs = metrics["rlm.runs"]
    assert runs["kind"] == "sum" and runs["monotonic"] and runs["temporality"] == "cumulative"
    root = [p for p in runs["points"] if p["attributes"]["rlm.depth"] == 0]
    assert len(root) == 1 and root[0]["value"] == 1
    assert root[0]["attributes"] == {
        "rlm.environment": "pure_rlm", "rlm.framework": "native", "gen_ai.request.model": model,
        "gen_ai.provider.name": "scripted", "rlm.depth": 0, "rlm.completed": True, "rlm.termination_reason": "final",
    }
    assert _total(metrics["rlm.steps"], **{"rlm.depth": 0}) == final["steps"]
    reward = [p for p in metrics["rlm.reward"]["points"] if p["attributes"]["rlm.depth"] == 0]
    assert reward[0]["count"] == 1 and reward[0]["sum"] == pytest.approx(final["total_reward"])
    duration = metrics["rlm.run_duration"]
    assert duration["unit"] == "s" and duration["kind"] == "histogram"
    root_duration = [p for p in duration["points"] if p["attributes"]["rlm.depth"] == 0][0]
    assert root_duration["count"] == 1 and root_duration["sum"] == pytest.approx(final["duration_s"])
    assert final["duration_s"] > 0
    tokens = metrics["rlm.tokens"]
    assert {p["attributes"]["gen_ai.request.model"] for p in tokens["points"]} == {model}
    assert {p["attributes"]["rlm.environment"] for p in tokens["points"]} == {"pure_rlm"}
    assert {p["attributes"]["gen_ai.provider.name"] for p in tokens["points"]} == {"scripted"}
    inputs, outputs = _final_usage(events)
    assert _total(tokens, **{"gen_ai.token.type": "input"}) == inputs
    assert _total(tokens, **{"gen_ai.token.type": "output"}) == outputs
    usage = metrics["gen_ai.client.token.usage"]
    calls = sum(1 for e in events if e.type == "model_call_end")
    assert sum(p["count"] for p in usage["points"] if p["attributes"]["gen_ai.token.type"] == "input") == calls
    assert _total(usage, **{"gen_ai.token.type": "input"}) == inputs
    assert metrics["rlm.cost"]["unit"] == "USD" and _total(metrics["rlm.cost"]) == pytest.approx(final["cost"])


def test_rlm_run_exports_its_metrics_over_otlp_http(rlm_cli, rlm_script, monkeypatch):
    with OTLPReceiver() as receiver:
        run, events, result = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__ENDPOINT=receiver.traces_url)
        metrics = receiver.wait_for_metrics(*NAMES)
        receiver.wait_for_spans(4)
    assert not receiver.errors and receiver.url not in result.err  # no warning (of this run: an earlier test's
    # run may still deliver in the background, to a receiver that is gone)
    posts = [r for r in receiver.requests if r.path == "/v1/metrics"]
    assert posts and all(r.headers["content-type"] == "application/x-protobuf" for r in posts)
    assert {m["resource"]["service.name"] for m in metrics} == {"rlm"} and {m["scope"] for m in metrics} == {"rlm"}
    _assert_run_metrics(_last(metrics), run, events)
    roles = {p["attributes"]["rlm.role"] for p in _last(metrics)["rlm.tokens"]["points"]}
    assert roles == {"root", "sub"}  # the llm_query call is counted once, as the sub model's


def test_a_child_run_counts_as_a_run_of_depth_1(rlm_cli, rlm_script, monkeypatch):
    with OTLPReceiver() as receiver:
        run, events, _ = _run(rlm_cli, rlm_script, monkeypatch, replies=CHILD_REPLIES,
                              OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url)
        metrics = _last(receiver.wait_for_metrics(*NAMES))
    _assert_run_metrics(metrics, run, events)  # tokens: the root's final usage holds the child's as sub usage
    assert sorted((p["attributes"]["rlm.depth"], p["value"]) for p in metrics["rlm.runs"]["points"]) == [(0, 1), (1, 1)]
    child = next(e for e in events if e.type == "final" and e.parent_run_id).data
    assert _total(metrics["rlm.steps"], **{"rlm.depth": 1}) == child["steps"]


def test_without_model_call_events_the_step_and_sub_call_usage_counts(rlm_cli, rlm_script, monkeypatch, tmp_path):
    """A host that delivers no model_call_end: the same token totals from the recorded usage, once per call."""
    for replies in (REPLIES, CHILD_REPLIES):
        run, events, _ = _run(rlm_cli, rlm_script, monkeypatch, replies=replies, RLM_SINK__OTEL__METRICS="false")
        with OTLPReceiver() as receiver:
            sink = create(OtelSinkSettings(endpoint=receiver.traces_url), type("S", (), {"home": tmp_path})())
            for event in events:
                if event.type in ("run_start", "step", "sub_call", "final"):
                    sink.handle(event)
            sink.close()
            metrics = _last(receiver.wait_for_metrics("rlm.runs"))
        inputs, outputs = _final_usage(events)
        assert _total(metrics["rlm.tokens"], **{"gen_ai.token.type": "input"}) == inputs
        assert _total(metrics["rlm.tokens"], **{"gen_ai.token.type": "output"}) == outputs
        assert "gen_ai.client.operation.duration" not in metrics  # durations come with model_call_end only


def test_the_file_exporter_writes_metric_lines_beside_the_spans(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    path = rlm_isolated.work / "traces" / "otel.jsonl"
    run, events, _ = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__EXPORTER="file",
                          RLM_SINK__OTEL__PATH=str(path))
    lines = (path.parent / "otel-metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and set(json.loads(lines[0])) == {"resourceMetrics"}
    metrics = decode_metrics_body(lines[0].encode(), "application/json")
    _assert_run_metrics(_last(metrics), run, events)
    assert path.exists()  # the spans are where they were


def test_metrics_false_sends_none(rlm_cli, rlm_script, monkeypatch):
    with OTLPReceiver() as receiver:
        _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__ENDPOINT=receiver.traces_url,
             RLM_SINK__OTEL__METRICS="false")
        assert receiver.wait_for_spans(4)
    assert not receiver.metrics and not [r for r in receiver.requests if r.path.endswith("/metrics")]


def test_a_metrics_endpoint_that_is_down_is_one_warning(rlm_cli, rlm_script, monkeypatch):
    down = f"http://127.0.0.1:{free_port()}/v1/metrics"
    with OTLPReceiver() as receiver:
        run, _, result = _run(rlm_cli, rlm_script, monkeypatch, RLM_SINK__OTEL__ENDPOINT=receiver.traces_url,
                              RLM_SINK__OTEL__METRICS_ENDPOINT=down, RLM_SINK__OTEL__TIMEOUT="0.5")
        assert receiver.wait_for_spans(4)  # the spans still go out
    assert run["final_response"] == "42"
    mine = [line for line in result.err.splitlines() if down in line]
    assert len(mine) == 1 and "otel sink: could not export metrics" in mine[0] and "refused" in mine[0], result.err
    assert receiver.traces_url not in result.err  # the spans went out


def test_a_backend_that_is_down_is_still_one_warning(caplog, tmp_path):
    """Spans and metrics to the same dead host: the span export's warning alone."""
    events = _recorded(tmp_path)
    settings = OtelSinkSettings(endpoint=f"http://127.0.0.1:{free_port()}/v1/traces", timeout=0.5)
    sink = create(settings, type("S", (), {"home": tmp_path})())
    with caplog.at_level(logging.WARNING, logger="rlm.sinks"):
        for event in events:
            sink.handle(event)
        sink.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlm.sinks"]
    assert len(warnings) == 1 and "could not export" in warnings[0] and "metrics" not in warnings[0], warnings


def test_grpc_metrics_and_two_sinks_sharing_one_cumulative_pipeline(tmp_path):
    events = _recorded(tmp_path)
    with OTLPGrpcReceiver() as receiver:
        settings = OtelSinkSettings(exporter="otlp-grpc", endpoint=receiver.endpoint, timeout=2,
                                    headers={"X-Tenant": "t1"})
        first, second = (create(settings, type("S", (), {"home": tmp_path})()) for _ in range(2))
        for event in events:
            first.handle(event)
            second.handle(event.model_copy(update={"run_id": event.run_id + "_b",
                                                   "root_run_id": event.root_run_id + "_b"}))
        first.close()
        second.close()
        metrics = _last(receiver.wait_for_metrics("rlm.runs"))
    assert _total(metrics["rlm.runs"]) == 2  # both sinks' runs in one cumulative stream
    assert all(m.get("x-tenant") == "t1" for m in receiver.metadata)


def _recorded(tmp_path: Path) -> list[RunEvent]:  # noqa: ARG001
    """A small root run made by hand: one model call (with its model_call_end), one step, its final."""
    ts = 1_800_000_000.0

    def event(type_: str, dt: float, **data) -> RunEvent:
        return RunEvent(type=type_, run_id="run_m", root_run_id="run_m", ts=ts + dt,  # type: ignore[arg-type]
                        data=data)

    return [event("run_start", 0, environment="pure_rlm", framework="native", model="scripted:s.json",
                  provider="scripted", settings={"labels": {"team": "a"}}),
            event("model_call_end", 1, call=1, role="root", model="scripted:s.json", provider="scripted",
                  purpose="turn", input_tokens=600, output_tokens=10, cost=0.001, seconds=0.5),
            event("step", 1.1, step=1, action="final", reward=1.0,
                  usage={"root": {"calls": 1, "input_tokens": 600, "output_tokens": 10, "cost": 0.001}}),
            event("final", 1.2, completed=True, steps=1, total_reward=1.0, duration_s=1.2, cost=0.001,
                  termination_reason="final")]


def test_labels_model_names_and_the_numbers_of_hand_made_events(tmp_path):
    settings = OtelSinkSettings(exporter="file", path=tmp_path / "otel-traces.jsonl")
    sink = create(settings, type("S", (), {"home": tmp_path})())
    for event in _recorded(tmp_path):
        sink.handle(event)
    sink.close()
    metrics = _last(decode_metrics_body((tmp_path / "otel-metrics.jsonl").read_text().encode(), "application/json"))
    (runs,) = metrics["rlm.runs"]["points"]
    assert runs["attributes"]["rlm.label.team"] == "a" and runs["attributes"]["gen_ai.request.model"] == "s.json"
    assert _total(metrics["rlm.cost"]) == pytest.approx(0.001)
    (call,) = metrics["gen_ai.client.operation.duration"]["points"]
    assert call["count"] == 1 and call["sum"] == 0.5 and call["attributes"]["rlm.role"] == "root"
    assert _total(metrics["rlm.tokens"]) == 610  # the step's usage is not counted again


def test_the_sink_asks_for_model_call_end_and_forwards_live_events_only_where_wanted():
    class Spans:
        live_events = False

        def __init__(self):
            self.seen = []

        def handle(self, event):
            self.seen.append(event.type)

        def close(self):
            pass

    class Metrics(Spans):
        live_events = frozenset({"model_call_end"})

    spans, metrics = Spans(), Metrics()
    sink = OtelSink(spans, metrics)
    assert sink.live_events == frozenset({"model_call_end"})
    for type_ in ("run_start", "model_call_start", "model_call_end", "step", "final"):
        sink.handle(RunEvent(type=type_, run_id="r", root_run_id="r", data={}))  # type: ignore[arg-type]
    assert spans.seen == ["run_start", "step", "final"]
    assert metrics.seen == ["run_start", "model_call_end", "step", "final"]
    spans.live_events = frozenset({"code_end"})
    assert OtelSink(spans, metrics).live_events == frozenset({"code_end", "model_call_end"})
    spans.live_events = True
    assert OtelSink(spans, metrics).live_events is True and OtelSink(Spans(), None).live_events is False


def test_names_and_endpoints():
    assert model_name("scripted:s.json") == "s.json" and model_name("llamacpp:smollm2") == "smollm2"
    assert model_name("ollama:llama3:8b") == "llama3:8b" and model_name("gpt-4o") == "gpt-4o"
    assert provider_name("", "openai:gpt-4o") == "openai" and provider_name("p", "m") == "p"
    http = OtelSinkSettings()
    assert metrics_endpoint(http, {}) == ("http://localhost:4318/v1/metrics", "default")
    assert metrics_endpoint(http, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"})[0] == "http://c:4318/v1/metrics"
    assert metrics_endpoint(http, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
                                   "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m/x"})[0] == "http://m/x"
    traces = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/v1/traces"}
    assert metrics_endpoint(http, traces)[0] == "http://t/v1/metrics"
    assert metrics_endpoint(OtelSinkSettings(endpoint="https://v/otel/v1/traces"), {}) == \
        ("https://v/otel/v1/metrics", "endpoint")
    assert metrics_endpoint(OtelSinkSettings(metrics_endpoint="http://m:9/v1/metrics"), {})[1] == "metrics_endpoint"
    assert metrics_endpoint(OtelSinkSettings(exporter="otlp-grpc"), {}) == ("localhost:4317", "default")
    assert metrics_endpoint(OtelSinkSettings(exporter="otlp-grpc", endpoint="c:4317"), {})[0] == "c:4317"
    assert metrics_file(OtelSinkSettings(), Path("/h")) == Path("/h/observability/otel-metrics.jsonl")
    assert metrics_file(OtelSinkSettings(path=Path("/x/otel.jsonl")), Path("/h")) == Path("/x/otel-metrics.jsonl")
    with pytest.raises(ValueError):
        OtelSinkSettings(metrics="sometimes")


@pytest.mark.parametrize("status", [404, 405])
def test_a_traces_only_backend_gets_spans_and_no_warning(caplog, tmp_path, status):
    """Jaeger (404) and Phoenix (405) take OTLP traces but no metrics: the spans go out, the metrics stop after the
    first answer, and a user is not warned on every run (an info line says it)."""
    with OTLPReceiver() as receiver:
        receiver.respond("/v1/metrics", status=status, body="no metrics here", content_type="text/plain")
        sink = create(OtelSinkSettings(endpoint=receiver.traces_url, timeout=1), type("S", (), {"home": tmp_path})())
        with caplog.at_level(logging.INFO, logger="rlm.sinks"):
            for event in _recorded(tmp_path):
                sink.handle(event)
            sink.close()
        assert receiver.wait_for_spans(2) and sink.exported >= 2
        tried = [r for r in receiver.requests if r.path.endswith("/metrics")]
    records = [r for r in caplog.records if r.name == "rlm.sinks"]
    assert not [r for r in records if r.levelno >= logging.WARNING], [r.getMessage() for r in records]
    assert len(tried) == 1
    assert any(f"HTTP {status}" in r.getMessage() and "only spans" in r.getMessage() for r in records)
