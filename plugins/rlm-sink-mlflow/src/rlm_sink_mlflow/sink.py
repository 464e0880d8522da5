"""The ``mlflow`` sink: each RLM run as an MLflow run, each run tree as an MLflow trace.

Per run (root and child alike): a run in the experiment, nested with the ``mlflow.parentRunId`` tag (a child
under its parent's run, a root whose labels carry ``benchmark_id`` under that benchmark's one run, which several
processes racing to make it agree on: ``benchmark.py``), with params and tags at ``run_start``, step metrics
(``step=`` the step number) in one ``log_batch`` each time the sink has caught up with the run (``flush``), and
the final metrics, status, task and answer (``run_text.py``) and trajectory artifact at ``final``, sent at once
with the tree's trace. At the root's ``final`` the spans the shared ``SpanBuilder`` made for the whole tree go up
as one trace linked to the root's run (``traces.py``). Content (task, answer, messages, code, output, error text,
the trajectory file) goes only through the host's ``content_policy(settings)``: off, none of it leaves.

Every call goes to ``MlflowClient(tracking_uri)``: nothing global is set. Calls are made under one lock, so
``handle`` is safe from any thread. The connection (importing mlflow: ≈ 1–2 s, the probe, the experiment) is made
in the background from the moment the sink is built, so it overlaps the run instead of eating into the runner's
flush deadline after it. The first failure of the backend (an http(s) server is probed at
``/health`` first, with ``timeout``) logs one warning on ``rlm.sinks`` and turns the sink off for the rest of
the run tree; ``close`` then returns at once.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Optional

from rlm_host import RunEvent
from rlm_host.sdk.observability import SPAN_LIVE_EVENTS, SpanBuilder, SpanRecord, content_policy, redacted_clip

from rlm_sink_mlflow.benchmark import BenchmarkRuns
from rlm_sink_mlflow.run_text import run_note
from rlm_sink_mlflow.settings import MlflowSinkSettings, probe, resolved_uri
from rlm_sink_mlflow.store import open_experiment, store_problem

log = logging.getLogger("rlm.sinks")

PARAM_KEYS = ("environment", "framework", "model", "provider", "sub_model", "sub_provider", "sandbox")
SETTING_PARAMS = ("max_steps", "max_depth", "max_llm_calls", "max_sub_calls", "exec_timeout", "timeout")
PARAM_CHARS = 6000  # MLflow 3's limit on a param value
ERROR_CHARS = 5000  # of a run's error in its rlm.error tag (MLflow's limit on a tag value is 8000)
CONNECT_SECONDS = 60  # importing mlflow and the first calls; each HTTP call is bounded by `timeout` too
SPAN_EVENTS = {"run_start", "step", "sub_call", "compaction", "model_retry", "final", "error", *SPAN_LIVE_EVENTS}


#: (tracking URI, experiment name) → (experiment id, when this process last reached it): a process running many
#: run trees (a benchmark, a service) asks the server once a minute, not once per run.
_KNOWN: dict[tuple[str, str], tuple[str, float]] = {}
KNOWN_SECONDS = 60.0


@dataclass
class _Run:
    """An RLM run's MLflow run."""

    mlflow_id: str
    depth: int
    benchmark: Optional[str] = None  # the benchmark run a root run is nested under
    benchmark_id: Optional[str] = None
    task: Optional[str] = None  # the task as content capture lets it out (None: capture off)


def run_status(termination_reason: str, completed: bool) -> str:
    """FINISHED for an answer, KILLED when cancelled, FAILED for an error or a limit hit before any answer."""
    if termination_reason == "cancelled":
        return "KILLED"
    if termination_reason == "final" or completed:
        return "FINISHED"
    return "FAILED"


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {redacted_clip(text[0], 300, 'ellipsis')}" if text else type(exc).__name__


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class MlflowSink:
    live_events = SPAN_LIVE_EVENTS  # model_call_end: each model call is a chat span of the trace

    def __init__(self, settings: Optional[MlflowSinkSettings], home: Path) -> None:
        self.settings = settings or MlflowSinkSettings()
        self.uri = resolved_uri(self.settings)
        self.home = Path(home)
        self._lock = threading.RLock()
        self._client: Any = None
        self._tracing: Any = None
        self._experiment_id: Optional[str] = None
        self._runs: dict[str, _Run] = {}
        self._benchmarks: Optional[BenchmarkRuns] = None
        self._content = content_policy(self.settings)
        self._builder = SpanBuilder("rlm", content=self._content)
        self._spans: dict[str, list[SpanRecord]] = {}
        self._off: Optional[str] = None
        self._closed = False
        self._connected = threading.Event()
        self._connect_error: Optional[str] = None
        self._pending: dict[str, list[Any]] = {}  # MLflow run id → step metrics not sent yet
        threading.Thread(target=self._warm_up, name="rlm-sink-mlflow-connect", daemon=True).start()

    # ------------------------------------------------------------------ protocol

    def handle(self, event: RunEvent) -> None:
        with self._lock:
            if self._off is not None or self._closed:
                return
            try:
                self._dispatch(event)
            except Exception as exc:  # one line, then off: observability never breaks a run
                self._turn_off(str(exc) if isinstance(exc, ConnectionError) else _one_line(exc))

    def flush(self) -> None:
        """Send the step metrics held since the last call: one ``log_batch`` per run, however many steps piled
        up (the host calls this whenever the sink has caught up, so a slow server means bigger batches)."""
        with self._lock:
            if self._off is not None or self._closed or self._client is None:
                return
            try:
                for run_id in list(self._pending):
                    self._send_pending(run_id)
            except Exception as exc:
                self._turn_off(_one_line(exc))

    def close(self) -> None:
        """End what never got a ``final`` (spans as an error trace, runs KILLED); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._off is not None or self._client is None:
                return
            try:
                if self.settings.tracing:
                    for record in self._builder.finish("the run tree ended without a final event"):
                        self._spans.setdefault(str(record.attributes.get("rlm.root_run_id", "")), []).append(record)
                    for root, records in list(self._spans.items()):
                        run = self._runs.get(root)
                        self._upload(root, records, run.mlflow_id if run else None)
                for run_id in list(self._pending):
                    self._send_pending(run_id)
                for run in self._runs.values():
                    self._client.set_terminated(run.mlflow_id, "KILLED")
            except Exception as exc:
                self._turn_off(_one_line(exc))
            self._runs.clear()
            self._spans.clear()

    # ------------------------------------------------------------------ events

    def _dispatch(self, event: RunEvent) -> None:
        if event.type not in SPAN_EVENTS:
            return  # sink_error and types of future versions are ignored
        if self._client is None:
            if not self._connected.wait(CONNECT_SECONDS):
                raise ConnectionError(f"no connection to the tracking store after {CONNECT_SECONDS} s")
            if self._connect_error is not None:
                raise ConnectionError(self._connect_error)
        if self.settings.tracing:
            records = self._builder.add(event)
            self._spans.setdefault(event.root_run_id, []).extend(records)
        handler = getattr(self, f"_on_{event.type}", None)
        if handler is not None:  # sub_call, compaction, model_retry and error only shape the trace
            handler(event)

    def _on_run_start(self, event: RunEvent) -> None:
        data = event.data
        settings = got if isinstance(got := data.get("settings"), dict) else {}
        labels = {str(k): str(v) for k, v in (settings.get("labels") or {}).items()}
        benchmark = None
        tags = {"rlm.run_id": event.run_id, "rlm.root_run_id": event.root_run_id, "rlm.depth": str(event.depth),
                "mlflow.source.name": "rlm", "mlflow.source.type": "LOCAL"}
        tags.update({k: v[:5000] for k, v in labels.items() if not k.startswith("mlflow.")})
        parent = self._runs.get(event.parent_run_id or "")
        if parent is not None:
            tags["mlflow.parentRunId"] = parent.mlflow_id
        elif event.depth == 0 and labels.get("benchmark_id"):
            benchmark = tags["mlflow.parentRunId"] = self._benchmark_runs().parent(labels["benchmark_id"], labels,
                                                                                    _ms(event.ts))
        if event.parent_run_id:
            tags["rlm.parent_run_id"] = event.parent_run_id
        name = (labels.get("case") or str(data.get("environment") or "rlm")) if event.depth == 0 else "rlm_query"
        run = self._client.create_run(self._experiment_id, start_time=_ms(event.ts), tags=tags,
                                      run_name=f"{name} · {event.run_id[-8:]}")
        task = self._content.text(str(data.get("task") or ""))
        self._runs[event.run_id] = _Run(run.info.run_id, event.depth, benchmark, labels.get("benchmark_id"), task)
        params: dict[str, Any] = {"task": task[: self.settings.task_chars]} if task is not None else {}
        params["depth"] = event.depth
        params.update({k: data[k] for k in PARAM_KEYS if data.get(k) not in (None, "")})
        params.update({k: settings[k] for k in SETTING_PARAMS if settings.get(k) is not None})
        self._log_batch(run.info.run_id, params=params)

    def _on_step(self, event: RunEvent) -> None:
        run = self._runs.get(event.run_id)
        if run is None:
            return
        data = event.data
        step = int(data.get("step") or 0)
        usage = (data.get("usage") or {}).get("root") or {}
        values = {"reward": data.get("reward"), "cumulative_reward": data.get("cumulative_reward"),
                  "input_tokens": usage.get("input_tokens"), "output_tokens": usage.get("output_tokens")}
        self._pending.setdefault(run.mlflow_id, []).extend(_metrics(values, event.ts, step))

    def _on_final(self, event: RunEvent) -> None:
        run = self._runs.pop(event.run_id, None)
        data = event.data
        if run is not None:
            usage = data.get("usage") or {}
            root, sub = usage.get("root") or {}, usage.get("sub") or {}
            tokens = {k: int(root.get(k) or 0) + int(sub.get(k) or 0) for k in ("input_tokens", "output_tokens")}
            metrics = {"total_reward": data.get("total_reward"), "steps": data.get("steps"),
                       "total_input_tokens": tokens["input_tokens"], "total_output_tokens": tokens["output_tokens"],
                       "total_tokens": sum(tokens.values()), "cost": data.get("cost"),
                       "duration_s": data.get("duration_s"), "completed": 1.0 if data.get("completed") else 0.0,
                       "sub_calls": sub.get("calls")}
            reason = str(data.get("termination_reason") or "error")
            tags = {"rlm.termination_reason": reason, "rlm.completed": str(bool(data.get("completed"))).lower()}
            error = self._content.error(data["error"], ERROR_CHARS) if data.get("error") else None
            if error is not None:
                tags["rlm.error"] = error
            answer = self._content.text(data.get("final_response"))
            if answer is not None:
                tags["rlm.answer"] = answer[: self.settings.task_chars]
            note = run_note(run.task, answer, error)
            if note is not None:
                tags["mlflow.note.content"] = note  # the run page's Description
            status = run_status(reason, bool(data.get("completed")))

            def finish_run(run: _Run = run) -> None:
                self._log_batch(run.mlflow_id, metrics=metrics, tags=tags, ts=event.ts,
                                held=self._pending.pop(run.mlflow_id, []))
                self._client.set_terminated(run.mlflow_id, status, end_time=_ms(event.ts))

            calls: list[Callable[[], None]] = [finish_run,
                                               partial(self._log_trajectory, run, data.get("trajectory_path"))]
        else:
            calls = []
        if event.run_id == event.root_run_id:
            calls += self._finish_tree(event, run)
        _together(calls)  # independent requests at once: the end of a run costs one round trip, not six

    # ------------------------------------------------------------------ helpers

    def _warm_up(self) -> None:
        try:
            self._connect()
        except Exception as exc:
            self._connect_error = str(exc) if isinstance(exc, ConnectionError) else store_problem(exc)
        finally:
            self._connected.set()

    def _connect(self) -> None:
        """Probe an http(s) server, bound MLflow's HTTP retries, find or create the experiment (both skipped when
        an earlier run tree of this process did so less than ``KNOWN_SECONDS`` ago)."""
        key = (self.uri or "", self.settings.experiment)
        known = _KNOWN.get(key)
        if known is not None and time.monotonic() - known[1] < KNOWN_SECONDS:
            self._experiment_id = known[0]
        elif self.uri and self.uri.startswith(("http://", "https://")):
            problem = probe(self.uri, self.settings.timeout)
            if problem:
                raise ConnectionError(problem)
        # MLflow's REST client reads these per request from the environment (there is no per-client setting):
        # set them only when the user has not, so one setting serves the whole process. The last one keeps
        # ``set_terminated`` from writing "View run …" lines to stdout (``rlm run --json`` prints JSON there).
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(self.settings.max_retries))
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(max(1, math.ceil(self.settings.timeout))))
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        if self._experiment_id is None:
            client, self._experiment_id = open_experiment(self.uri, self.settings.experiment)
        else:
            from mlflow import MlflowClient

            client = MlflowClient(tracking_uri=self.uri)
        _KNOWN[key] = (self._experiment_id, time.monotonic())
        if self.settings.tracing:
            from rlm_sink_mlflow.traces import tracing_client

            self._tracing = tracing_client(client.tracking_uri)
        self._client = client  # set last: handle() uses the client only once _connected is set

    def _benchmark_runs(self) -> BenchmarkRuns:
        if self._benchmarks is None:
            self._benchmarks = BenchmarkRuns(self._client, str(self._experiment_id))
        return self._benchmarks

    def _log_batch(self, run_id: str, *, metrics: Optional[dict[str, Any]] = None,
                   params: Optional[dict[str, Any]] = None, tags: Optional[dict[str, str]] = None,
                   ts: Optional[float] = None, held: Optional[list[Any]] = None) -> None:
        from mlflow.entities import Param, RunTag

        batch_metrics = [*(held or []), *_metrics(metrics or {}, ts, 0)]
        batch_params = [Param(k, str(v)[:PARAM_CHARS]) for k, v in (params or {}).items()]
        batch_tags = [RunTag(k, v) for k, v in (tags or {}).items()]
        if batch_metrics or batch_params or batch_tags:
            self._client.log_batch(run_id, metrics=batch_metrics, params=batch_params, tags=batch_tags)

    def _log_trajectory(self, run: _Run, path: Any) -> None:
        trajectory = self._content.artifact(path) if self.settings.log_trajectory and run.depth == 0 else None
        if trajectory is not None:
            self._client.log_artifact(run.mlflow_id, str(trajectory), artifact_path="trajectory")

    def _finish_tree(self, event: RunEvent, root: Optional[_Run]) -> list[Callable[[], None]]:
        """The root's final: the calls uploading the tree's trace and touching the benchmark run's end time."""
        calls: list[Callable[[], None]] = []
        records = self._spans.pop(event.root_run_id, [])
        if self.settings.tracing and records:
            calls.append(lambda: self._upload(event.root_run_id, records, root.mlflow_id if root else None))
        if root is not None and root.benchmark is not None:
            calls.append(lambda: self._end_benchmark_case(root, event.ts))
        return calls

    def _end_benchmark_case(self, root: _Run, ts: float) -> None:
        """Settle the benchmark's parent run (``BenchmarkRuns.settle``: one search; more only after a race) and
        move its end time to this case's. A parent deleted by another process meanwhile is not an error."""
        assert root.benchmark is not None and root.benchmark_id is not None
        winner = self._benchmark_runs().settle(root.benchmark_id, root.mlflow_id, root.benchmark)
        try:
            self._client.set_terminated(winner, "FINISHED", end_time=_ms(ts))
        except Exception as exc:
            log.debug("mlflow sink: the benchmark run %s: %s", winner, _one_line(exc))

    def _send_pending(self, run_id: str) -> None:
        held = self._pending.pop(run_id, [])
        if held:
            self._client.log_batch(run_id, metrics=held)

    def _upload(self, root_run_id: str, records: list[SpanRecord], source_run: Optional[str] = None) -> None:
        from rlm_sink_mlflow.traces import upload_trace

        self._spans.pop(root_run_id, None)
        assert self._experiment_id is not None  # set with the client (_connect), which every caller checked
        if records:
            upload_trace(self._tracing, records, self._experiment_id, source_run, {"rlm.root_run_id": root_run_id})

    def _turn_off(self, reason: str) -> None:
        self._off = reason
        where = "" if self.uri and self.uri in reason else f" (tracking URI {self.uri or 'MLflow default'})"
        log.warning("mlflow sink: %s%s; it records nothing more for this run tree", reason, where)


def _metrics(values: dict[str, Any], ts: Optional[float], step: int) -> list[Any]:
    """MLflow ``Metric`` s of the numeric values (a bool or None is skipped)."""
    from mlflow.entities import Metric

    timestamp = _ms(ts) if ts is not None else 0
    return [Metric(k, float(v), timestamp, step) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _together(calls: list[Callable[[], None]]) -> None:
    """Run independent calls at once (threads), wait for all, raise the first failure."""
    if len(calls) <= 1:
        for call in calls:
            call()
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="rlm-sink-mlflow") as pool:
        for future in [pool.submit(call) for call in calls]:
            future.result()


def create(settings: Optional[MlflowSinkSettings], services: Any) -> MlflowSink:
    """The sink factory named by the ``mlflow`` SinkSpec: ``create(settings, services)``."""
    return MlflowSink(settings, services.home)
