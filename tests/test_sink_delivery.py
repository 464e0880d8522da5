"""Sinks never slow a run down or break it: each is fed from its own thread through a bounded queue; one that
raises, hangs or falls behind is disabled with one warning and a ``sink_error`` event in the trajectory; after the
answer, the sinks deliver together in the background, at most ``[run] sink_flush_seconds``."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from rlm_host.event_types import LIVE_EVENT_TYPES
from rlm_host.events import EventBus, RunEvent
from rlm_host.observability.delivery import SinkDelivery, SinkWorker
from support import misbehaving_sinks

REPLIES = ["```repl\nx = llm_query('a question')\nprint(x)\n```", "```repl\nprint(2)\n```", "FINAL(42)"]


@pytest.fixture(autouse=True)
def _sinks(rlm_isolated, monkeypatch):
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.misbehaving_sinks")
    misbehaving_sinks.RELEASE.clear()
    yield
    misbehaving_sinks.RELEASE.set()


class Blocking:
    """A sink whose every call waits until ``release`` is set (a backend that stopped answering)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def handle(self, event):
        self.release.wait(10)

    def close(self):
        pass


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(rlm_cli, rlm_script, *extra: str, replies=REPLIES):
    model = rlm_script(replies, rules=[{"match": "a question", "text": "an answer"}])
    Path("notes.txt").write_text("a context of a few words")
    started = time.monotonic()
    result = rlm_cli("run", "What?", "--context", "notes.txt", "--model", model, "--sandbox", "process", "--json",
                     *extra)
    return result, time.monotonic() - started


def test_a_slow_sink_does_not_slow_the_run(rlm_cli, rlm_script, rlm_isolated, monkeypatch):
    record = rlm_isolated.work / "delivered.txt"
    monkeypatch.setenv("RLM_SINK__SLOW__DELAY", "0.2")
    monkeypatch.setenv("RLM_SINK__SLOW__RECORD", str(record))
    monkeypatch.setenv("RLM_RUN__SINK_FLUSH_SECONDS", "30")
    baseline = json.loads(_run(rlm_cli, rlm_script)[0].out)["duration_s"]  # the same run, no sink to feed
    result, _ = _run(rlm_cli, rlm_script, "--sink", "slow")
    assert result.code == 0, result.err
    run = json.loads(result.out)
    events = _events(Path(run["trajectory_path"]))
    # delivered on the run's path, the events would add 0.2 s each: the run may not take half of that longer
    on_path = 0.2 * len(events)
    assert run["duration_s"] < baseline + on_path / 2, (run["duration_s"], baseline, on_path)
    delivered = record.read_text().split()
    recorded = [e["type"] for e in events if e["type"] not in LIVE_EVENT_TYPES]  # a sink gets no live events
    assert delivered == recorded, "the run waits at its end until the sink has everything"
    assert not any(e["type"] == "sink_error" for e in events)


def test_a_raising_sink_is_disabled_once_and_recorded(rlm_cli, rlm_script, monkeypatch):
    monkeypatch.setenv("RLM_SINK__SLOW__DELAY", "0")
    # model calls that take time, as real ones do: the sinks (made beside the run) are fed while it runs
    result, _ = _run(rlm_cli, rlm_script, "--sink", "raising,slow",
                     replies=[{"text": r, "delay": 0.3} for r in REPLIES])
    assert result.code == 0, result.err
    run = json.loads(result.out)
    assert run["final_response"] == "42"
    errors = [e for e in _events(Path(run["trajectory_path"])) if e["type"] == "sink_error"]
    assert len(errors) == 1 and errors[0]["data"]["sink"] == "raising"
    assert "ConnectionError" in errors[0]["data"]["error"] and "HTTP 503" in errors[0]["data"]["error"]
    assert result.err.count("sink raising disabled") == 1 and "Traceback" not in result.err


def test_a_hanging_sink_costs_the_run_at_most_the_flush_deadline(rlm_cli, rlm_script, monkeypatch):
    monkeypatch.setenv("RLM_RUN__SINK_FLUSH_SECONDS", "1")
    _, baseline = _run(rlm_cli, rlm_script)  # the whole command without the sink
    result, seconds = _run(rlm_cli, rlm_script, "--sink", "hanging")
    assert result.code == 0, result.err
    run = json.loads(result.out)
    assert run["final_response"] == "42" and seconds < baseline + 1 + 2, (seconds, baseline)  # + the deadline
    # the answer and the trajectory were out before the sinks' flush began: the drop is the warning's to say
    assert _events(Path(run["trajectory_path"]))[-1]["type"] == "final"
    assert "sink hanging disabled" in result.err and "did not deliver within 1 s" in result.err


def test_a_sink_that_cannot_start_is_a_sink_error_not_a_failure(rlm_cli, rlm_script):
    result, _ = _run(rlm_cli, rlm_script, "--sink", "broken")
    assert result.code == 0, result.err
    errors = [e for e in _events(Path(json.loads(result.out)["trajectory_path"])) if e["type"] == "sink_error"]
    assert len(errors) == 1
    assert "not started" in errors[0]["data"]["error"] and "BACKEND_API_KEY" in errors[0]["data"]["error"]
    assert "sink broken disabled" in result.err


def test_an_unknown_sink_is_a_usage_error(rlm_cli, rlm_script):
    result, _ = _run(rlm_cli, rlm_script, "--sink", "nope")
    assert result.code == 2 and "nope" in result.err and "Traceback" not in result.err


def test_a_worker_that_falls_behind_is_disabled_without_blocking_the_emitter():
    bus, reported = EventBus(), []
    stuck = Blocking()
    worker = SinkWorker("stuck", stuck, lambda name, reason, event: reported.append(reason), queue_size=3,
                        call_seconds=60)
    bus.subscribe("stuck", worker.submit)
    started = time.monotonic()
    for i in range(20):
        bus.emit(RunEvent(type="step", run_id="r", root_run_id="r", data={"step": i}))
    assert time.monotonic() - started < 0.5
    assert worker.disabled and "fell 3 events behind" in worker.disabled and len(reported) == 1
    stuck.release.set()
    worker.close()
    assert worker.wait(5)


def test_a_call_running_too_long_disables_the_sink_at_the_next_event():
    bus, slow = EventBus(), Blocking()
    delivery = SinkDelivery(bus, [("slow", slow)], flush_seconds=0.5, call_seconds=0.1)
    seen: list[RunEvent] = []
    bus.subscribe("record", seen.append)
    bus.emit(RunEvent(type="run_start", run_id="r", root_run_id="r"))
    time.sleep(0.3)
    bus.emit(RunEvent(type="step", run_id="r", root_run_id="r", data={"step": 1}))
    assert [e.type for e in seen] == ["run_start", "sink_error", "step"]
    assert "has not returned after 0.1 s" in seen[1].data["error"]
    slow.release.set()
    delivery.close()


def test_runs_show_names_the_sinks_the_trace_id_and_a_disabled_sink(rlm_cli, rlm_script, monkeypatch):
    from rlm_host.sdk.observability import trace_id_for

    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.misbehaving_sinks,support.default_sinks")
    result, _ = _run(rlm_cli, rlm_script, "--sink", "raising")
    run = json.loads(result.out)
    shown = rlm_cli("runs", "show", run["run_id"], plugins="rlm-runs")
    assert shown.code == 0, shown.err
    assert f"sinks: on-by-default, raising  trace id: {trace_id_for(run['run_id'])}" in shown.out
    assert "sink raising disabled: ConnectionError" in shown.out
    as_json = json.loads(rlm_cli("runs", "show", run["run_id"], "--json", plugins="rlm-runs").out)
    assert as_json["trace_id"] == trace_id_for(run["run_id"])


def test_a_sink_on_by_default_feeds_runs_that_name_no_sinks_and_only_them(rlm_cli, rlm_script, rlm_isolated,
                                                                           monkeypatch):
    """``SinkSpec(default=True)``: fed while ``[run] sinks`` is not set (``--sink`` adds to it); a run that sets
    ``[run] sinks`` (also ``[]``) feeds exactly those, ``--sink`` adding to them."""
    monkeypatch.setenv("RLM_PLUGIN_MODULES", "support.misbehaving_sinks,support.default_sinks")
    record = rlm_isolated.work / "default.txt"
    monkeypatch.setenv("RLM_SINK__ON_BY_DEFAULT__RECORD", str(record))

    def fed(*extra: str) -> tuple[list[str], bool]:
        record.unlink(missing_ok=True)
        result, _ = _run(rlm_cli, rlm_script, *extra)
        assert result.code == 0, result.err
        start = _events(Path(json.loads(result.out)["trajectory_path"]))[0]
        return start["data"]["settings"]["sinks"], record.exists()

    assert fed() == (["on-by-default"], True)
    assert fed("--sink", "raising") == (["on-by-default", "raising"], True)
    monkeypatch.setenv("RLM_RUN__SINKS", '["raising"]')
    assert fed() == (["raising"], False)
    monkeypatch.setenv("RLM_RUN__SINKS", "[]")
    assert fed() == ([], False)
    assert fed("--sink", "on-by-default") == (["on-by-default"], True)


def test_a_sink_with_flush_batches_as_much_as_its_backend_is_slow():
    bus = EventBus()
    batches: list[int] = []

    class Batching:
        def __init__(self):
            self.held = 0

        def handle(self, event):
            self.held += 1

        def flush(self):  # one request to a backend answering in 0.1 s
            if self.held:
                time.sleep(0.1)
                batches.append(self.held)
                self.held = 0

        def close(self):
            self.flush()

    delivery = SinkDelivery(bus, [("batching", Batching())], flush_seconds=5)
    for i in range(50):
        bus.emit(RunEvent(type="step", run_id="r", root_run_id="r", data={"step": i}))
        time.sleep(0.01)
    delivery.close()
    assert sum(batches) == 50 and 2 <= len(batches) < 25, batches


def test_ctrl_c_while_sinks_flush_stops_waiting_and_keeps_the_run(monkeypatch):
    bus, seen, stuck = EventBus(), [], Blocking()
    delivery = SinkDelivery(bus, [("stuck", stuck)], flush_seconds=30)
    bus.subscribe("record", seen.append)
    bus.emit(RunEvent(type="final", run_id="r", root_run_id="r"))

    def interrupted(self, seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(SinkWorker, "wait", interrupted)
    started = time.monotonic()
    delivery.close()  # returns at once: no KeyboardInterrupt out of it
    assert time.monotonic() - started < 1
    assert seen[-1].type == "sink_error" and "interrupted (Ctrl-C)" in seen[-1].data["error"]
    stuck.release.set()


def test_sinks_get_the_recorded_events_and_the_live_ones_only_when_they_ask():
    """A sink exports what happened; what is in progress (a model call, code running) reaches only a sink that sets
    ``live_events = True`` (a UI), so the live events cost an exporting sink nothing."""

    class Recorder:
        def __init__(self, live: bool) -> None:
            self.live_events, self.types = live, []

        def handle(self, event):
            self.types.append(event.type)

        def close(self):
            pass

    plain, live = Recorder(False), Recorder(True)
    bus = EventBus()
    delivery = SinkDelivery(bus, [("plain", plain), ("live", live)])
    for type_ in ("run_start", "step_start", "model_call_start", "model_call_end", "step", "final"):
        bus.emit(RunEvent(type=type_, run_id="r", root_run_id="r", data={}))
    delivery.close()
    assert plain.types == ["run_start", "step", "final"]
    assert live.types == ["run_start", "step_start", "model_call_start", "model_call_end", "step", "final"]


API_SCRIPT = """
import json, os, sys
from pathlib import Path
from rlm_host import RLM
result = RLM(model=sys.argv[1], sandbox="process", sinks=["slow"]).completion("a context of a few words", "What?")
record = Path(os.environ["RLM_SINK__SLOW__RECORD"])
delivered = record.read_text().split() if record.exists() else []  # what the sink had delivered when we got it
print(json.dumps({"answer": result.final_response, "delivered_then": len(delivered)}), flush=True)
"""


def test_the_python_api_returns_before_the_sinks_deliver_and_the_process_waits_for_them(rlm_script, rlm_isolated):
    """``RLM.completion`` gives its result while a slow sink still delivers; the process delivers everything
    before it exits (the wait at exit), and no warning is said."""
    import os
    import subprocess
    import sys

    record = rlm_isolated.work / "delivered.txt"
    model = rlm_script(REPLIES, rules=[{"match": "a question", "text": "an answer"}])
    env = {**os.environ, "RLM_PLUGIN_MODULES": "support.misbehaving_sinks", "RLM_SINK__SLOW__DELAY": "0.3",
           "RLM_SINK__SLOW__RECORD": str(record), "RLM_RUN__SINK_FLUSH_SECONDS": "30",
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", API_SCRIPT, model], env=env, capture_output=True, text=True,
                          timeout=120, cwd=rlm_isolated.work)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    delivered = record.read_text().split()
    assert out["answer"] == "42" and delivered[0] == "run_start" and delivered[-1] == "final"
    # 0.3 s per event on the sink's side: the result came while most were still queued, the exit after all of them
    assert out["delivered_then"] < len(delivered) / 2, (out, delivered)
    assert "disabled" not in done.stderr and "Traceback" not in done.stderr
