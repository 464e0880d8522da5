"""The plugin's hook implementation: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks() -> list[SinkSpec]:
    return [
        SinkSpec(
            "mlflow",
            "MLflow: a run per RLM run (params, step metrics, trajectory artifact) and a trace per run tree",
            "rlm_sink_mlflow.sink:create",  # imported only when a run uses the sink
            settings="rlm_sink_mlflow.settings:MlflowSinkSettings",  # [sink.mlflow]
            requires=("mlflow",),
            install_hint="pip install rlm-sink-mlflow (it brings mlflow-skinny)",
            check="rlm_sink_mlflow.settings:check",
        )
    ]
