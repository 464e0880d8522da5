"""The ``langsmith`` sink: each finished run tree posted as LangSmith runs, then its feedback.

Runs go through the SDK's multipart ingestion (``Client.multipart_ingest``, ``POST /runs/multipart``; the SDK
falls back to ``/runs/batch`` on an older server), which posts finished runs with explicit ids, times and dotted
order. Feedback (``reward``, ``completed``) goes through ``Client.create_feedback`` on the root run, with the
project's id (``Client.read_project``), which the SDK now wants with run feedback. The client is
built with ``auto_batch_tracing=False`` (no background thread: the host already calls ``handle`` from one) and
short timeouts and retries. After a failure the sink stops trying (one warning on ``rlm.sinks``), so ``close``
never spends the host's deadline on a backend that is down; what ``close`` still sends, it sends in a thread
with a deadline.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from rlm_host import Readiness, RunEvent
from rlm_host.sdk.observability import SPAN_LIVE_EVENTS, SpanBuilder, SpanRecord, content_policy, redacted_clip
from rlm_sink_langsmith.runs import NAMESPACE, run_id_for, to_runs
from rlm_sink_langsmith.settings import API_KEY_ENV, LangSmithSinkSettings

logger = logging.getLogger("rlm.sinks")
#: The SDK logs each failed request here, and also reports it to ``tracing_error_callback``.
SDK_LOGGER = "langsmith.client"
_ERRNO = re.compile(r"\[Errno -?\d+\][^'\")\\]*")
_posting = threading.local()


class _WhilePosting(logging.Filter):
    """Drops the SDK's warnings logged by a thread while it posts for a sink (the sink's warning tells them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING or not getattr(_posting, "active", False)


logging.getLogger(SDK_LOGGER).addFilter(_WhilePosting())


def make_client(settings: LangSmithSinkSettings, on_error: Any = None) -> Any:
    """A LangSmith ``Client`` with short timeouts, few retries and no background thread; ``on_error(exc)`` is
    told of failed ingestion requests (the SDK logs them and carries on)."""
    from langsmith import Client
    from urllib3.util.retry import Retry

    key, url, _ = settings.resolved()
    millis = int(settings.timeout * 1000)
    return Client(api_url=url, api_key=key, timeout_ms=(millis, millis), auto_batch_tracing=False,
                  tracing_error_callback=on_error,
                  retry_config=Retry(total=0))


#: (API URL, project name) → the project's id, read once per process.
_PROJECT_IDS: dict[tuple[str, str], Any] = {}


class LangSmithSink:
    """Builds the span tree (``rlm_host.SpanBuilder``) and posts each run tree when its root run ends."""

    live_events = SPAN_LIVE_EVENTS  # each model call is a run

    def __init__(self, settings: LangSmithSinkSettings) -> None:
        _, self.api_url, self.project = settings.resolved()
        self.flush_seconds = settings.flush_seconds
        self.builder = SpanBuilder(content=content_policy(settings))
        self.posted = self.failures = 0
        self._trees: dict[str, list[SpanRecord]] = {}
        self._errors: list[str] = []  # what the SDK reported during the current post
        self._lock = threading.RLock()
        self._closed = False
        self.client = make_client(settings, lambda exc: self._errors.append(f"{type(exc).__name__}: {exc}"))

    # ------------------------------------------------------------------ the Sink protocol

    def handle(self, event: RunEvent) -> None:
        with self._lock:
            if self._closed:
                return
            for record in self.builder.add(event):
                self._trees.setdefault(record.trace_id, []).append(record)
                if record.parent_span_id is None:
                    self._post(self._trees.pop(record.trace_id), record)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for record in self.builder.finish():
                self._trees.setdefault(record.trace_id, []).append(record)
            trees, self._trees = list(self._trees.values()), {}
        worker = threading.Thread(target=self._post_all, args=(trees,), name="rlm-sink-langsmith-close", daemon=True)
        worker.start()
        worker.join(self.flush_seconds)
        if worker.is_alive():
            self._fail(f"delivery did not finish within {self.flush_seconds:g}s")

    # ------------------------------------------------------------------ internals

    def _post_all(self, trees: list[list[SpanRecord]]) -> None:
        for tree in trees:
            root = next((r for r in tree if r.parent_span_id is None), None)
            self._post(tree, root)
        try:
            self.client.close(timeout=0.5)
        except Exception:  # noqa: BLE001 - nothing left to deliver
            pass

    def _post(self, tree: list[SpanRecord], root: Optional[SpanRecord]) -> None:
        if self.failures:
            return  # the backend failed: do not spend more time on it
        errors = self._errors
        errors.clear()
        _posting.active = True
        try:
            self.client.multipart_ingest(create=to_runs(tree, self.project))
            if not errors and root is not None and root.operation == "invoke_agent":
                self._feedback(root)
        except Exception as exc:  # noqa: BLE001 - a backend problem must never break the run
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            _posting.active = False
        if errors:
            self._fail(errors[0])
        else:
            self.posted += len(tree)

    def _project_id(self) -> Any:
        """The project's id, which LangSmith wants with run feedback (the runs' post created the project); read
        once per process and project."""
        key = (self.api_url, self.project)
        if key not in _PROJECT_IDS:
            _PROJECT_IDS[key] = self.client.read_project(project_name=self.project).id
        return _PROJECT_IDS[key]

    def _feedback(self, root: SpanRecord) -> None:
        run_id, attrs = run_id_for(root), root.attributes
        session_id = self._project_id()
        scores = {"completed": 1.0 if attrs.get("rlm.completed") is True else 0.0}
        if isinstance(attrs.get("rlm.total_reward"), (int, float)):
            scores["reward"] = float(attrs["rlm.total_reward"])

        def post(key: str, score: float) -> None:
            self.client.create_feedback(run_id=run_id, key=key, score=score, stop_after_attempt=1,
                                        session_id=session_id, feedback_id=uuid.uuid5(NAMESPACE, f"{run_id}:{key}"),
                                        comment=str(attrs.get("rlm.termination_reason") or "") or None)

        with ThreadPoolExecutor(max_workers=len(scores), thread_name_prefix="rlm-sink-langsmith") as pool:
            for future in [pool.submit(post, key, score) for key, score in sorted(scores.items())]:
                future.result()  # both at once: the end of a run costs one round trip for its feedback

    def _fail(self, problem: str) -> None:
        self.failures += 1
        if self.failures == 1:
            errno = _ERRNO.search(problem)  # the SDK's message wraps urllib3's; keep the cause
            short = (f"{problem.split(':')[0]}: {errno.group(0).strip()}" if errno
                     else redacted_clip(problem, 300, "ellipsis", one_line=True))
            logger.warning("langsmith sink: could not deliver to %s: %s (later run trees are not sent)",
                           self.api_url, short)


def create(settings: Optional[LangSmithSinkSettings], services: Any) -> LangSmithSink:
    """The sink factory: needs an API key (settings or LANGSMITH_API_KEY / LANGCHAIN_API_KEY)."""
    settings = settings or LangSmithSinkSettings()
    if not settings.resolved()[0]:
        raise RuntimeError(f"LangSmith API key missing: set {API_KEY_ENV[0]} (or [sink.langsmith] api_key)")
    return LangSmithSink(settings)


def check(settings: Optional[LangSmithSinkSettings]) -> Readiness:
    """For ``rlm plugins doctor``: an API key present (variable names only) and ``GET /info`` answered."""
    settings = settings or LangSmithSinkSettings()
    key, url, project = settings.resolved()
    if not key:
        return Readiness(False, f"{' or '.join(API_KEY_ENV)} not set (API {url})",
                         f"export {API_KEY_ENV[0]}, or set [sink.langsmith] api_key")
    import requests

    try:
        response = requests.get(f"{url}/info", headers={"x-api-key": key}, timeout=min(settings.timeout, 2.0))
    except requests.RequestException as exc:
        reason = type(exc).__name__ + (" (connection refused)" if "refused" in str(exc) else "")
        return Readiness(False, f"key set; {url} unreachable: {reason}",
                         "set [sink.langsmith] api_url or LANGSMITH_ENDPOINT to a reachable LangSmith API")
    if not response.ok:
        return Readiness(False, f"key set; {url}/info answered HTTP {response.status_code}")
    version = (response.json() or {}).get("version") if "json" in response.headers.get("content-type", "") else None
    return Readiness(True, f"key set; {url} reachable" + (f" (LangSmith {version})" if version else "")
                     + f"; project {project}")
