"""Built-in run exporter: ``json``, a saved run tree's events as one JSON array (``rlm runs export``)."""

from __future__ import annotations

from rlm_host.components import ExporterSpec
from rlm_host.hookspecs import hookimpl


@hookimpl
def rlm_register_exporters() -> list[ExporterSpec]:
    return [ExporterSpec("json", "The run tree's events as one JSON array", "rlm_host.cli.runs_cmd:json_exporter")]
