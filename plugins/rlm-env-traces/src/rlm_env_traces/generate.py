"""Generated agent-harness trace files for tests and the benchmark: flat spans, OTLP-JSON batches, or both mixed.

Each trace is one agent run (``invoke_agent`` → ``chat`` model calls and ``execute_tool`` calls) with GenAI
attributes and span kinds (a model call is a ``CLIENT`` span, the rest ``INTERNAL``); a failed call carries an
``exception`` event, as OpenTelemetry SDKs record one. One failure mode is systemic — the ``researcher`` agent's
``web_search`` tool times out in about a third of its traces — and one is a one-off (a single ``rate limited``
chat error), so an analysis has something real to find. Deterministic for a given seed.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path
from typing import Any

import msgspec

AGENTS = {"researcher": ("research-service", "web_search"), "support": ("support-service", "lookup_order")}
MODELS = ("gpt-4o-mini", "claude-3-5-haiku")
SYSTEMIC_MESSAGE = "TimeoutError: web_search exceeded 30s"
ONE_OFF_MESSAGE = "RateLimitError: rate limited"
BASE_NS = 1_790_000_000_000_000_000
FILLER = "The user asked about shipping times and the agent consulted the knowledge base before answering. "
MALFORMED_LINE = b'{"trace_id": "broken", "span_id": \n'
_encode = msgspec.json.encode


def generate(path: Path, *, traces: int = 20, size_bytes: int = 0, fmt: str = "flat", malformed: int = 0,
             seed: int = 7) -> dict[str, Any]:
    """Write a trace file (gzip when ``path`` ends in ``.gz``): ``traces`` traces, or as many as reach
    ``size_bytes``; ``fmt`` is ``flat``, ``otlp`` or ``mixed``; ``malformed`` bad lines spread through it."""
    rng = random.Random(seed)
    opener = gzip.open if path.suffix == ".gz" else open
    written = count = bad = 0
    every = max(1, (traces if not size_bytes else 1000) // max(1, malformed))
    error_ids: list[str] = []
    with opener(path, "wb") as out:
        while (count < traces) if not size_bytes else (written < size_bytes):
            trace_id, spans = _trace(rng, count)
            if any(span["status"]["code"] == "ERROR" for span in spans):
                error_ids.append(trace_id)
            otlp = fmt == "otlp" or (fmt == "mixed" and count % 2)
            for line in ([_otlp_batch(spans)] if otlp else [_encode(span) for span in spans]):
                out.write(line + b"\n")
                written += len(line) + 1
            if bad < malformed and count % every == every - 1:
                out.write(MALFORMED_LINE)
                written, bad = written + len(MALFORMED_LINE), bad + 1
            count += 1
    return {"path": str(path), "traces": count, "error_trace_ids": error_ids, "bytes": written}


def _trace(rng: random.Random, number: int) -> tuple[str, list[dict[str, Any]]]:
    trace_id = f"{rng.getrandbits(128):032x}"
    agent = "researcher" if number % 2 == 0 else "support"
    service, tool = AGENTS[agent]
    model = MODELS[number % len(MODELS)]
    start = BASE_NS + number * 10_000_000_000
    root = _span(rng, trace_id, None, f"invoke_agent {agent}", start, start + 4_000_000_000, service,
                 {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent})
    spans = [root]
    for step in range(3):
        begin = start + step * 1_000_000_000
        chat = _span(rng, trace_id, root["span_id"], f"chat {model}", begin, begin + 400_000_000, service, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.agent.name": agent,
            "gen_ai.usage.input_tokens": 200 + rng.randrange(800),
            "gen_ai.usage.output_tokens": 20 + rng.randrange(200),
            "gen_ai.prompt": FILLER * (1 + rng.randrange(3))})
        chat["kind"] = "CLIENT"
        spans.append(chat)
        call = _span(rng, trace_id, root["span_id"], f"execute_tool {tool}", begin + 500_000_000,
                     begin + 900_000_000, service, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                                                    "gen_ai.agent.name": agent})
        spans.append(call)
    if agent == "researcher" and number % 6 == 0:  # systemic: a third of the researcher's runs
        spans[-1]["status"] = {"code": "ERROR", "message": SYSTEMIC_MESSAGE}
        spans[-1]["events"] = [_exception(spans[-1], SYSTEMIC_MESSAGE)]
        root["status"] = {"code": "ERROR", "message": "agent failed: tool error"}
    if number == 5:  # a one-off
        spans[1]["status"] = {"code": "ERROR", "message": ONE_OFF_MESSAGE}
        spans[1]["events"] = [_exception(spans[1], ONE_OFF_MESSAGE)]
    return trace_id, spans


def _span(rng: random.Random, trace_id: str, parent: str | None, name: str, start: int, end: int, service: str,
          attributes: dict[str, Any]) -> dict[str, Any]:
    return {"trace_id": trace_id, "span_id": f"{rng.getrandbits(64):016x}", "parent_span_id": parent, "name": name,
            "kind": "INTERNAL", "start_time": start, "end_time": end, "status": {"code": "OK", "message": ""},
            "attributes": attributes, "resource": {"service.name": service}}


def _exception(span: dict[str, Any], message: str) -> dict[str, Any]:
    """The ``exception`` event an OpenTelemetry SDK records on a span that failed with ``message``."""
    kind, text = message.split(": ", 1)
    return {"name": "exception", "time": span["end_time"],
            "attributes": {"exception.type": kind, "exception.message": text}}


def _otlp_batch(spans: list[dict[str, Any]]) -> bytes:
    """One trace's spans as an OpenTelemetry Collector file exporter writes them."""
    codes = {"UNSET": 0, "OK": 1, "ERROR": 2}
    kinds = {"INTERNAL": 1, "CLIENT": 3}
    converted = [{"traceId": s["trace_id"], "spanId": s["span_id"], "parentSpanId": s["parent_span_id"] or "",
                  "name": s["name"], "kind": kinds[s["kind"]], "startTimeUnixNano": str(s["start_time"]),
                  "endTimeUnixNano": str(s["end_time"]),
                  "status": {"code": codes[s["status"]["code"]], "message": s["status"]["message"]},
                  "attributes": _key_values(s["attributes"]),
                  **({"events": [{"timeUnixNano": str(e["time"]), "name": e["name"],
                                  "attributes": _key_values(e["attributes"])} for e in s["events"]]}
                     if "events" in s else {})}
                 for s in spans]
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": spans[0]["resource"]["service.name"]}}]}
    return _encode({"resourceSpans": [{"resource": resource,
                                       "scopeSpans": [{"scope": {"name": "harness"}, "spans": converted}]}]})


def _key_values(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _any_value(value)} for key, value in attributes.items()]


def _any_value(value: Any) -> dict[str, Any]:
    return {"intValue": str(value)} if isinstance(value, int) else {"stringValue": str(value)}


if __name__ == "__main__":  # python -m rlm_env_traces.generate … is `rlm traces generate …`
    import sys

    from rlm_env_traces.cli import app

    app(["generate", *sys.argv[1:]], prog_name="python -m rlm_env_traces.generate")
