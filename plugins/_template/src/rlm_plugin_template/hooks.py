"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import BenchmarkPackSpec, CommandSpec, DoctorCheck, SinkSpec, hookimpl


@hookimpl
def rlm_register_sinks():
    return [
        SinkSpec(
            "plugin-template-csv",  # run.sinks = ["plugin-template-csv"]; settings in [sink.plugin-template-csv]
            "One CSV row per finished run (id, depth, outcome, steps, reward, tokens, cost) for spreadsheets",
            "rlm_plugin_template.sink:create",  # imported only when a run uses the sink
            settings="rlm_plugin_template.sink:CsvSinkSettings",
        )
    ]


@hookimpl
def rlm_register_benchmark_packs():
    return [
        BenchmarkPackSpec(
            "plugin-template-qa",  # rlm bench run --preset plugin-template-qa; settings in [benchmark.plugin-template-qa]
            "Questions over a maintenance log (or your own JSON-lines file), each with its answer (3 cases)",
            "rlm_plugin_template.pack:create",  # imported only when the preset is listed in detail or run
            settings="rlm_plugin_template.pack:QaPackSettings",
        )
    ]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("plugin-template", "Commands of the plugin template.", "rlm_plugin_template.commands:app")]


@hookimpl
def rlm_doctor_checks():
    return [
        DoctorCheck(
            "plugin-template-output",
            "the CSV sink's output folder is writable",
            "rlm_plugin_template.checks:output_writable",  # called with the loaded settings
        )
    ]
