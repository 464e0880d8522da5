"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import CommandSpec, EnvironmentSpec, hookimpl


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            "trace_analysis",
            "Find systemic failure modes of agent harnesses in OpenTelemetry trace files, with trace and span ids",
            "rlm_env_traces.environment:TraceAnalysisEnvironment",  # imported only when a run uses it
            aliases=("traces",),
            requires=("msgspec", "re2"),
            settings="rlm_env_traces.environment:TraceSettings",  # [environment.trace_analysis]
            context_as_path=True,  # `--context FILE` arrives as its Path, never read into memory
            runs_code=False,  # JSON actions over the index: no sandbox is chosen or started
        ),
        EnvironmentSpec(
            "trace_rlm",
            "The pure_rlm REPL loop over a trace file: the model's code calls count_traces(), view_trace()…",
            "rlm_env_traces.repl:create",
            aliases=("traces-repl",),
            requires=("msgspec", "re2"),
            settings="rlm_env_traces.repl:TraceRLMSettings",
            context_as_path=True,
        ),
    ]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("traces", "Index, query, view, search and export OpenTelemetry trace files.",
                        "rlm_env_traces.cli:app")]
