"""The records every span sink shares: a finished span and its events (SDK-free), the ids a run's spans get
(derived from run ids, so a re-export gives the same ones), parents-first ordering, and the names the GenAI
conventions want (a model without our ``provider:`` prefix, an error's ``error.type``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, Optional, Union

AttributeValue = Union[str, bool, int, float]
SpanKind = Literal["internal", "client"]
SpanStatus = Literal["unset", "ok", "error"]


@dataclass
class SpanEventRecord:
    """A timestamped annotation of a span (code run, its output, a retry)."""

    name: str
    time_ns: int
    attributes: dict[str, AttributeValue] = field(default_factory=dict)


@dataclass
class SpanRecord:
    """One finished span. Ids are lower-case hex: ``trace_id`` 32 digits, span ids 16."""

    trace_id: str
    span_id: str
    parent_span_id: Optional[str]
    name: str
    kind: SpanKind
    start_ns: int
    end_ns: int
    run_id: str
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[SpanEventRecord] = field(default_factory=list)
    status: SpanStatus = "unset"
    status_message: str = ""

    @property
    def operation(self) -> str:
        """``invoke_agent``, ``chat`` or ``execute_tool``."""
        return str(self.attributes.get("gen_ai.operation.name", ""))


def trace_id_for(root_run_id: str) -> str:
    """The OpenTelemetry trace id of a run tree: 32 hex digits derived from its root run id."""
    return _digest(f"rlm-trace:{root_run_id}", 32)


def span_id_for(run_id: str, part: str) -> str:
    """The span id of one part of a run (``run``, ``chat:3``, ``tool:3``, ``sub:17``…)."""
    return _digest(f"rlm-span:{run_id}:{part}", 16)


def _digest(text: str, digits: int) -> str:
    value = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    return value if value.strip("0") else "1".rjust(digits, "0")  # an all-zero id is invalid in OpenTelemetry


def model_name(model: str) -> str:
    """A model as the GenAI conventions name it: ``provider:model`` without our ``provider:`` prefix."""
    head, sep, tail = model.partition(":")
    return tail if sep and tail and head and head.replace("-", "").replace("_", "").isalnum() else model


def error_type(error: str) -> str:
    """``error.type`` of an error line ``ClassName: message`` (its class), else ``error``."""
    head = error.partition(":")[0].strip()
    return head if head.isidentifier() else "error"


def tree_order(spans: Iterable[SpanRecord]) -> Iterator[SpanRecord]:
    """Spans with every parent before its children (for SDKs that open a child under a live parent span);
    spans whose parent is not among them come first, in start order."""
    spans = sorted(spans, key=lambda s: (s.start_ns, s.end_ns))
    ids = {s.span_id for s in spans}
    children: dict[Optional[str], list[SpanRecord]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id if span.parent_span_id in ids else None, []).append(span)
    pending = list(reversed(children.get(None, [])))
    while pending:
        span = pending.pop()
        yield span
        pending.extend(reversed(children.get(span.span_id, [])))
