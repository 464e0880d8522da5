"""The ``logfire`` sink: the span tree replayed through a local Logfire SDK instance.

``logfire.configure(local=True, …)`` returns an instance that is not the global one and sets no global
provider; its tracer provider carries Logfire's processors and exporter (``<base_url>/v1/traces``, gzip, the token
as ``Authorization``). Our finished spans are replayed through it (``rlm_sink_otel.replay``) with their ids and
times, so the Logfire trace id is ``rlm_host.trace_id_for(root run id)``. One instance per sink (per run tree),
flushed and shut down by ``close`` in a thread with a deadline. The SDK's own warnings about a failed export
(``logfire``, ``opentelemetry.exporter…``), from any thread while the sink lives, are folded into its one
warning (``rlm_sink_otel.folded_logs``). Logfire's scrubber stays on, except for rlm's ids and token counts
(:data:`UNSCRUBBED_ATTRIBUTES`): its default patterns would redact ``session.id`` by its name.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Optional

import requests

from rlm_host import Readiness
from rlm_host.sdk.observability import SpanRecord, content_policy
from rlm_sink_logfire.settings import TOKEN_ENV, LogfireSinkSettings
from rlm_sink_otel.convert import make_scope
from rlm_sink_otel.folded_logs import OTLP_EXPORTER_LOGGERS, FoldedLogs
from rlm_sink_otel.replay import ReplayIdGenerator, ReplaySink

CONNECT_TIMEOUT = 1.5
#: The SDK loggers that report a failed export.
SDK_LOGGERS = ("logfire", *OTLP_EXPORTER_LOGGERS)
#: The span attributes that hold only rlm's ids and token counts, never content: Logfire's scrubber leaves them as
#: they are (its default patterns match ``session.id`` by its name). Every other match (a task, a prompt, a reply,
#: code, output, an error's text, a label) is still scrubbed.
UNSCRUBBED_ATTRIBUTES = frozenset({
    "session.id", "gen_ai.conversation.id", "gen_ai.agent.id", "gen_ai.tool.call.id", "rlm.run_id",
    "rlm.root_run_id", "rlm.parent_run_id", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
    "rlm.usage.input_tokens", "rlm.usage.output_tokens",
})


def keep_rlm_ids(match: Any) -> Any:
    """Logfire's scrubbing callback (``logfire.ScrubMatch``): the value of a span attribute in
    :data:`UNSCRUBBED_ATTRIBUTES` as it is; ``None`` (scrubbed) for any other match."""
    path = match.path
    return match.value if len(path) == 2 and path[0] == "attributes" and path[1] in UNSCRUBBED_ATTRIBUTES else None


def logfire_attributes(record: SpanRecord, scrub: Callable[[str], str]) -> dict[str, Any]:
    """Logfire's message and tags; the root run's message shows the task (through ``scrub``: the SDK leaves a
    message it did not format as it is) and the reward."""
    attrs = record.attributes
    out: dict[str, Any] = {"logfire.tags": ("rlm",)}
    if record.operation == "invoke_agent" and record.parent_span_id is None:
        task = str(attrs.get("rlm.task") or "").splitlines()
        reward = attrs.get("rlm.total_reward")
        out["logfire.msg"] = f"{record.name}: {scrub(task[0][:120]) if task else ''}" + (
            f" (reward {reward})" if reward is not None else "")
    return out


class LogfireSink(ReplaySink):
    """Replays each run tree through its own local Logfire instance."""

    def __init__(self, settings: LogfireSinkSettings) -> None:
        import logfire

        # the SDK's warnings about failed exports (its own threads) become the sink's one warning at close; its
        # token check (a thread of its own) also warns through `warnings` when the server is down: said there too
        self.folded = FoldedLogs(*SDK_LOGGERS).start()
        warnings.filterwarnings("ignore", message="Logfire API is unreachable", category=UserWarning)
        ids = ReplayIdGenerator()
        base_url = settings.resolved_base_url()
        self.logfire = logfire.configure(
            local=True, send_to_logfire=True, token=settings.resolved_token(), service_name=settings.service_name,
            environment=settings.environment, console=False, metrics=False, inspect_arguments=False,
            scrubbing=logfire.ScrubbingOptions(callback=keep_rlm_ids),
            advanced=logfire.AdvancedOptions(base_url=base_url, id_generator=ids))
        scope = make_scope()
        tracer = self.logfire.config.get_tracer_provider().get_tracer(scope.name, scope.version)
        super().__init__(tracer, ids, name="logfire", target=base_url or "", service_name=settings.service_name,
                         content=content_policy(settings))
        self.flush_seconds = settings.flush_seconds

    def attributes(self, record: SpanRecord) -> dict[str, Any]:
        return logfire_attributes(record, self.scrub_message)

    def scrub_message(self, text: str) -> str:
        """``text`` scrubbed as the SDK scrubs a value it formats into a message."""
        return self.logfire.config.scrubber.scrub_value(("message", "rlm.task"), text)[0]

    def flush_backend(self, timeout: float) -> str:
        try:
            done = self.logfire.force_flush(timeout_millis=int(timeout * 1000))
        finally:
            self.folded.stop()
        return self.folded.summary() or ("" if done else f"the flush did not finish within {timeout:g}s")

    def shutdown_backend(self) -> None:
        self.logfire.shutdown(timeout_millis=500, flush=False)


def create(settings: Optional[LogfireSinkSettings], services: Any) -> LogfireSink:
    """The sink factory: needs a write token (settings or LOGFIRE_TOKEN)."""
    settings = settings or LogfireSinkSettings()
    if not settings.resolved_token():
        raise RuntimeError(f"Logfire token missing: set {TOKEN_ENV} (or [sink.logfire] token)")
    return LogfireSink(settings)


def check(settings: Optional[LogfireSinkSettings]) -> Readiness:
    """For ``rlm plugins doctor``: a token present (its variable's name only) and the server reachable."""
    import logfire

    settings = settings or LogfireSinkSettings()
    token = settings.resolved_token()
    base = logfire.AdvancedOptions(base_url=settings.resolved_base_url()).generate_base_url(
        token or "pylf_v1_us_x", warn_unknown_region=False)
    if not token:
        return Readiness(False, f"{TOKEN_ENV} not set (server {base})", f"export {TOKEN_ENV}, or set "
                         "[sink.logfire] token (a project write token)")
    try:  # what the SDK itself asks first: GET /v1/info with the token
        response = requests.get(f"{base}/v1/info", headers={"Authorization": token}, timeout=CONNECT_TIMEOUT)
    except requests.RequestException as exc:
        reason = type(exc).__name__ + (" (connection refused)" if "refused" in str(exc) else "")
        return Readiness(False, f"token set; {base} unreachable: {reason}",
                         "set [sink.logfire] base_url or LOGFIRE_BASE_URL to a reachable Logfire server")
    if response.status_code in (401, 403):
        return Readiness(False, f"{base} refused the token (HTTP {response.status_code})",
                         f"check {TOKEN_ENV} / [sink.logfire] token (a project write token)")
    if not response.ok:
        return Readiness(False, f"token set; {base}/v1/info answered HTTP {response.status_code}")
    try:
        project = response.json().get("project_name")
    except ValueError:
        project = None
    return Readiness(True, f"token accepted by {base}" + (f" (project {project})" if project else ""))
