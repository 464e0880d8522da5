"""Built-in sink: ``local``, run and step summaries as JSON lines under ``<home>/observability``."""

from __future__ import annotations

from rlm_host.components import SinkSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_sinks() -> list[SinkSpec]:
    return [
        SinkSpec(
            "local",
            "Local JSONL files: runs.jsonl and one steps file per run",
            "rlm_host.observability.local_jsonl:create",
            settings="rlm_host.observability.local_jsonl:LocalSinkSettings",
        )
    ]
