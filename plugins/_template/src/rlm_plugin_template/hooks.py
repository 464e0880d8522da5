"""The plugin's hook implementations: imported at every ``rlm`` start, so it imports only ``rlm_host``."""

from rlm_host import (
    BenchmarkPackSpec,
    CommandSpec,
    DoctorCheck,
    EnvironmentSpec,
    FrameworkSpec,
    ProviderSpec,
    SinkSpec,
    hookimpl,
)


@hookimpl
def rlm_register_environments():
    return [
        EnvironmentSpec(
            # rlm run --env plugin-template-lines; settings in [environment.plugin-template-lines]
            "plugin-template-lines",
            "Replies are RUN: <python> (run in the sandbox) or ANSWER: <text>",
            "rlm_plugin_template.environment:LinesEnvironment",  # called as LinesEnvironment(settings, ctx)
            settings="rlm_plugin_template.environment:LinesSettings",
        )
    ]


@hookimpl
def rlm_register_providers():
    return [
        ProviderSpec(
            # --model plugin-template-ollama:llama3.2; settings in [provider.plugin-template-ollama]
            "plugin-template-ollama",
            "Ollama's own chat API (/api/chat): ollama.com, or a local server with --base-url",
            "rlm_plugin_template.provider:create",  # imported only when a model string names the provider
            settings="rlm_plugin_template.provider:OllamaSettings",
            key_env=("OLLAMA_API_KEY",),  # `rlm models list` says whether it is set, never its value
            base_url="https://ollama.com",  # a local `ollama serve`: --base-url http://127.0.0.1:11434
            example_model="gpt-oss:120b",
        )
    ]


@hookimpl
def rlm_register_frameworks():
    return [
        FrameworkSpec(
            "plugin-template-agent",  # rlm run --framework plugin-template-agent
            "A tool-calling agent (tiny_agent.py, the stand-in for your framework) over the run's sandbox",
            "rlm_plugin_template.framework:TinyAgentFramework",  # the framework is imported only by a run using it
            settings="rlm_plugin_template.framework:AgentSettings",
            mode="agent",  # "native_rlm" when the framework implements the RLM loop itself
        )
    ]


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
            # rlm bench run --preset plugin-template-qa; settings in [benchmark.plugin-template-qa]
            "plugin-template-qa",
            "Questions over a maintenance log (or your own JSON-lines file), each with its answer (3 cases)",
            "rlm_plugin_template.pack:create",  # imported only when the preset is listed in detail or run
            settings="rlm_plugin_template.pack:QaPackSettings",
        )
    ]


@hookimpl
def rlm_register_commands():
    return [CommandSpec("plugin-template", "Commands of the plugin template.", "rlm_plugin_template.commands:app")]


@hookimpl
def rlm_register_doctor_checks():
    return [
        DoctorCheck(
            "plugin-template-output",
            "the CSV sink's output folder is writable",
            "rlm_plugin_template.checks:output_writable",  # called with the loaded settings
        )
    ]
