"""The ``plugin-template-qa`` benchmark pack: questions over a document, each with the answer a scorer checks.

A pack factory is called as ``create(settings, services)`` when the preset is listed or run, and returns the
cases as dicts (``case_id``, ``task``, ``context``, ``expected``, optionally ``scorer`` and ``tags``). By
default the cases ask about a small maintenance log kept here; with ``[benchmark.plugin-template-qa] path =
"cases.jsonl"`` they come from your own JSON-lines file, one ``{"id", "question", "answer", "context"}`` a line
(and optionally ``"scorer"``: exact, contains, numeric…).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field
from rlm_host import ConfigError, HostServices

LOG = "\n".join([
    "2026-03-01 pump P-1 inspected, pressure 4.1 bar",
    "2026-03-02 valve V-7 replaced after a leak",
    "2026-03-04 pump P-2 inspected, pressure 3.8 bar",
    "2026-03-09 valve V-7 inspected, no leak",
    "2026-03-11 pump P-1 seal replaced",
])

DEFAULT_CASES: list[dict[str, Any]] = [
    {"id": "log_valve", "question": "Which valve was replaced, and on what date?", "answer": "V-7",
     "scorer": "contains"},
    {"id": "log_inspections", "question": "How many inspections does the log record?", "answer": 3,
     "scorer": "numeric"},
    {"id": "log_pressure", "question": "What pressure did pump P-2 read, in bar?", "answer": 3.8,
     "scorer": "numeric"},
]


class QaPackSettings(BaseModel):
    """``[benchmark.plugin-template-qa]`` in rlm.toml."""

    model_config = ConfigDict(extra="forbid")

    path: Optional[Path] = Field(None, description="a JSON-lines file of cases (default: the built-in log cases)")


def _records(settings: Optional[QaPackSettings]) -> list[dict[str, Any]]:
    if settings is None or settings.path is None:
        return [{**case, "context": LOG} for case in DEFAULT_CASES]
    path = Path(settings.path).expanduser()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"[benchmark.plugin-template-qa] path: cannot read {path}: {exc.strerror}") from None
    try:
        return [json.loads(line) for line in lines if line.strip()]
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: line {exc.lineno} is not JSON: {exc.msg}") from None


def create(settings: Optional[QaPackSettings], services: HostServices) -> list[dict[str, Any]]:
    """The pack factory named by the BenchmarkPackSpec."""
    cases = []
    for number, record in enumerate(_records(settings), 1):
        missing = [key for key in ("id", "question", "answer") if key not in record]
        if missing:
            raise ConfigError(f"case {number} has no {', '.join(missing)}")
        case = {"case_id": str(record["id"]), "task": record["question"], "expected": record["answer"],
                "context": {"kind": "inline", "value": record.get("context", "")}}
        if "scorer" in record:
            case["scorer"] = record["scorer"]
        cases.append(case)
    return cases
