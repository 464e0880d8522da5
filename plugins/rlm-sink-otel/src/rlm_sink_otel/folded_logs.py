"""Vendor SDKs' own warning lines, folded into the one warning a sink gives.

OpenTelemetry exporters and vendor SDKs log each failed export (often several lines, from background threads:
"Transient error … retrying", "Failed to export span batch …"). A sink must say one clear thing instead. While a
:class:`FoldedLogs` is active, every WARNING-or-worse record of the loggers it names, from any thread, is kept in
its ``lines`` and not shown; the sink reports the first of them in its own warning. Records of those loggers
while no capture is active pass through untouched.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

_lock = threading.Lock()
_active: list["FoldedLogs"] = []
_installed: set[str] = set()


def first_line(record: logging.LogRecord) -> str:
    message = record.getMessage()
    return message.splitlines()[0] if message else str(record.msg)


class _Fold(logging.Filter):
    """The first filter of a named logger: hands a warning to the active captures instead of showing it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        with _lock:
            captures = list(_active)
        for capture in captures:
            capture.lines.append(first_line(record))
        return not captures


class FoldedLogs:
    """Keeps the named loggers' warnings (see the module docstring) between :meth:`start` and :meth:`stop`, or
    within ``with``. Several captures may be active at once; each gets every line."""

    def __init__(self, *logger_names: str) -> None:
        self.names = logger_names
        self.lines: list[str] = []

    def start(self) -> "FoldedLogs":
        with _lock:
            for name in self.names:
                if name not in _installed:  # first in line: before the SDK's own duplicate filters
                    logging.getLogger(name).filters.insert(0, _Fold())
                    _installed.add(name)
            if self not in _active:
                _active.append(self)
        return self

    def stop(self) -> None:
        with _lock:
            if self in _active:
                _active.remove(self)

    def summary(self) -> Optional[str]:
        """The first line, and the last when there are several; None when nothing was logged."""
        if not self.lines:
            return None
        return self.lines[0] if len(self.lines) == 1 else f"{self.lines[0]} … {self.lines[-1]}"

    def __enter__(self) -> "FoldedLogs":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The OpenTelemetry SDK exporters' loggers (OTLP/HTTP and OTLP/gRPC).
OTLP_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http.trace_exporter",
                         "opentelemetry.exporter.otlp.proto.grpc.exporter")


def explained_export(exporter: Any, export: Callable[[], Any], success: Any, *loggers: str) -> tuple[bool, str]:
    """Run ``export`` (an exporter's export call) with ``loggers`` folded: (True, "") when it returned
    ``success``, else (False, why): the exception, the exporter's ``last_problem()``, or its first log line."""
    with FoldedLogs(*loggers) as logs:  # the exporter's own lines go into the sink's one warning
        try:
            result = export()
        except Exception as exc:  # noqa: BLE001 - exporters may raise on I/O errors
            return False, f"{type(exc).__name__}: {exc}"
    if result == success:
        return True, ""
    explain = getattr(exporter, "last_problem", None)
    problem = explain() if callable(explain) else ""
    return False, problem or logs.summary() or "the exporter reported a failure"
