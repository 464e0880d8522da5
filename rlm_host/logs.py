"""Logging through structlog, configured once and imported lazily (structlog costs ~0.1 s to import).

Readable key=value lines on stderr by default, JSON lines with ``--log-json``, debug level with ``-v``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

_state: dict[str, Any] = {"level": logging.WARNING, "json": False, "configured": False}


def configure(*, verbose: int = 0, json: bool = False, level: str | None = None) -> None:
    """Set level and format; takes effect for loggers created before and after the call."""
    if level is not None:
        _state["level"] = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if verbose:
        _state["level"] = logging.DEBUG if verbose > 1 else min(_state["level"], logging.INFO)
    _state["json"] = json
    if _state["configured"]:
        _apply()


def _apply() -> None:
    import structlog

    processors: list[Any] = [structlog.processors.add_log_level]
    if _state["json"]:
        processors += [structlog.processors.TimeStamper(fmt="iso", utc=True), structlog.processors.JSONRenderer()]
    else:
        processors.append(
            structlog.dev.ConsoleRenderer(
                colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback, pad_event_to=0
            )
        )
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_state["level"]),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),
        cache_logger_on_first_use=False,
    )
    _state["configured"] = True


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time (it is replaced under test capture)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def enabled(level: int) -> bool:
    """Whether a message at ``level`` would be shown; check before debug logging on a hot or start-up path."""
    return level >= _state["level"]


def get_logger(name: str) -> Any:
    """A structlog logger bound to ``logger=name``; the first call imports and configures structlog."""
    if not _state["configured"]:
        _apply()
    import structlog

    return structlog.get_logger().bind(logger=name)
