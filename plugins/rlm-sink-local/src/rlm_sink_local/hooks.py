"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "local",
            "Local JSONL files: runs.jsonl and one steps file per run",
            "rlm_sink_local.sink:create",
            settings="rlm_sink_local.sink:LocalSinkSettings",  # [sink.local]
            install_hint="pip install rlm-sink-local",
            default=True,  # fed by every run whose [run] sinks is not set
        )
    ]
