"""Logging: one format and one level for rlm's own events and for every library's (openai, httpx, anthropic,
google-genai, docker), through structlog's standard-library bridge.

rlm logs constant event names with key-value fields (``log.warning("plugin broken", plugin=…, error=…)``) on
structlog loggers that sit on standard-library loggers under ``rlm``; the libraries log through the standard
library. Both end in one handler on the root logger that renders with structlog: readable key=value lines on
stderr, or JSON lines with ``--log-json``. Levels: warnings by default; rlm's info with ``-v``; everything's
debug with ``-vv`` (the SDKs' requests and retries included) or ``[logging] level = "debug"``.

structlog costs ~0.1 s to import: it is imported at the first record, never at start. ``configure`` may be
called again as flags and settings become known: it only changes levels and the state read when a record is
rendered, so handlers and structlog are set up once per process.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

ROOT = "rlm"
_state: dict[str, Any] = {"level": logging.WARNING, "json": False}


def configure(*, verbose: int = 0, json: bool = False, level: str | None = None) -> None:
    """Set the level (``level`` from settings, raised by ``-v`` / ``-vv``) and the format (``json``)."""
    if level is not None:
        _state["level"] = logging.getLevelName(level.upper())
    if verbose:
        _state["level"] = logging.DEBUG if verbose > 1 else min(_state["level"], logging.INFO)
    _state["json"] = json
    root = logging.getLogger()
    if not any(isinstance(handler, _Bridge) for handler in root.handlers):
        root.addHandler(_Bridge())
    logging.getLogger(ROOT).setLevel(_state["level"])
    # libraries speak at the default level (warnings), and all of them at debug: their INFO is per-request noise
    root.setLevel(logging.DEBUG if _state["level"] <= logging.DEBUG else logging.WARNING)


def say(text: str, *, event: str, level: str = "info", **fields: Any) -> None:
    """A line for the person at the terminal, on stderr: ``text`` with its control characters shown, never sent
    (``terminal_safe``: an error may quote a model's words), or, with ``--log-json``, a JSON record (``event`` and
    ``fields``) like every log line, so that stderr stays machine-readable."""
    from rlm_host.redact import redact, redact_data

    text, fields = redact(text), redact_data(fields)
    if not _state["json"]:
        from rlm_host.text import terminal_safe

        print(terminal_safe(text), file=sys.stderr)
        return
    import json
    from datetime import datetime, timezone

    stamp = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
    record = {"event": event, **fields, "logger": f"{ROOT}.cli", "level": level, "timestamp": stamp}
    print(json.dumps(record, default=str), file=sys.stderr)


def enabled(level: int) -> bool:
    """Whether a message at ``level`` would be shown; check before debug logging on a hot or start-up path."""
    return level >= _state["level"]


def get_logger(name: str) -> Any:
    """A structlog logger on the standard-library logger ``name`` (under ``rlm``); imports structlog once."""
    import structlog

    if not structlog.is_configured():
        if not any(isinstance(handler, _Bridge) for handler in logging.getLogger().handlers):
            configure(json=_state["json"])  # the level and format already chosen
        structlog.configure(processors=[structlog.stdlib.filter_by_level, structlog.stdlib.add_logger_name,
                                        structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
                            logger_factory=structlog.stdlib.LoggerFactory(), wrapper_class=structlog.stdlib.BoundLogger,
                            cache_logger_on_first_use=True)
    return structlog.get_logger(name)


class _Bridge(logging.Handler):
    """The root handler: renders every record, rlm's or a library's, with structlog onto the current stderr
    (the one in place at the time: tests capture it); its formatter is made at the first record."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.formatter is None:
                self.formatter = _structlog_formatter()
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def _bang(event: dict[str, Any]) -> str:
    """``! message (field=value, …)``: how rlm says a warning to the person at the terminal."""
    skip = {"event", "logger", "level", "timestamp", "_record", "_from_structlog", "exc_info"}
    fields = ", ".join(f"{k}={v}" for k, v in event.items() if k not in skip)
    return f"! {event.get('event')}" + (f" ({fields})" if fields else "")


def _structlog_formatter() -> logging.Formatter:
    import structlog

    from rlm_host.redact import redact_data

    to_json: list[Callable[[Any, str, Any], Any]] = [
        structlog.processors.format_exc_info, structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.JSONRenderer()]
    console = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), pad_event_to=0,
                                            exception_formatter=structlog.dev.plain_traceback)

    def render(logger: Any, method: str, event: Any) -> str:
        """The format asked for now (``--log-json`` may come after the first record)."""
        if not _state["json"]:
            if method == "warning" and str(event.get("logger", "")).startswith(ROOT):
                return _bang(event)  # rlm's own warnings: the "! …" lines of the live view
            return str(console(logger, method, event))
        for step in to_json:
            event = step(logger, method, event)
        return str(event)

    # every record, rlm's or a library's, rendered with known secrets and URL passwords masked
    formatter: logging.Formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name],
        processors=[structlog.stdlib.add_log_level, structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    lambda _logger, _method, event: redact_data(event), render],
    )
    return formatter
